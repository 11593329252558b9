// SPDX-License-Identifier: Apache-2.0
// Scores each user's click stream with a Keras recurrent model, event by event, in Flink: every
// user's recurrent state lives in Flink's keyed state, so checkpoints carry it and a restarted or
// rescaled job goes on with every user's sequence where it stopped.
//
//   java ... RecurFlinkExample MODEL.keras [EVENTS.csv]     (a local MiniCluster)
//   flink run -c RecurFlinkExample recur-flink-example.jar MODEL.keras EVENTS.csv   (a cluster)
//
// EVENTS.csv: "user,step,f0,f1,...[,end]" per line; "end" closes the user's session. Without it,
// a few synthetic users.
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import recur.flink.ModelSource;
import recur.flink.RecurKeyedFunction;

public class RecurFlinkExample {
  /** One click: the user, its position in the session, the model's input features. */
  public static class Click {
    public String user;
    public int step;
    public float[] features;
    public boolean end;

    public Click() {}

    static Click parse(String line) {
      String[] w = line.trim().split(",");
      Click c = new Click();
      c.user = w[0];
      c.step = Integer.parseInt(w[1]);
      c.end = w[w.length - 1].equals("end");
      int n = w.length - 2 - (c.end ? 1 : 0);
      c.features = new float[n];
      for (int i = 0; i < n; ++i) c.features[i] = Float.parseFloat(w[2 + i]);
      return c;
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: RecurFlinkExample MODEL.keras [EVENTS.csv]");
      System.exit(2);
    }
    List<Click> clicks = new ArrayList<>();
    if (args.length > 1) {
      for (String l : Files.readAllLines(Paths.get(args[1])))
        if (!l.isBlank() && !l.startsWith("#")) clicks.add(Click.parse(l));
    } else {
      for (int step = 0; step < 4; ++step)
        for (String user : new String[] {"ada", "bob", "cy"})
          clicks.add(Click.parse(user + "," + step + "," + (0.1f * step) + "," + ((user.charAt(0) - 'a') * 0.2f) + ",-0.3"
                                 + (step == 3 ? ",end" : "")));
    }
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.enableCheckpointing(10_000);  // each user's stream is in every checkpoint
    // The model travels in the job (fine up to a few MB); for larger ones see ModelSource.file and
    // ModelSource.distributedCache.
    ModelSource model = ModelSource.bytesOf(args[0]);
    env.fromData(clicks).setParallelism(1)
        .keyBy(c -> c.user)
        .process(new RecurKeyedFunction<String, Click, String>(
                     model,
                     c -> c.features,  // one step of the model's inputs
                     (user, c, y) -> user + " step " + c.step + (c.end ? " (session end)" : "") + ": " + Arrays.toString(y),
                     Types.STRING)
                     .withStateTtl(Duration.ofHours(6))  // idle users start afresh
                     .withSessionEnd(c -> c.end))        // so do users whose session ended
        .uid("recur-scores")                             // keeps the state's identity across job versions
        .print();
    env.execute("recur per-user scores");
  }
}
