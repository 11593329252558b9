#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a representative subset of the Keras parity fixtures in a plain text format that the C#
tests read without a JSON library (standard library only).

usage: extract_fixtures.py FIXTURE_DIR OUT_FILE

Format, one record per line, whitespace-separated:
  case <dialect 2|3> <file>/<name> <tolerance> <keras_version>
  json <layer JSON on one line>
  input_size <n>
  weight <index> <ndims> <dims...> <count> <values...>
  call
  reset none | zero | set <num_states> <count> <values...>
  input <ndims> <dims...> <count> <values...>
  mask none | <count> <values 0/1...>
  init <num_states> <count> <values...>
  training 0|1
  output <name> <count> <values...>
  end
"""
import json
import sys

CASES = {
    "keras3/gru.json": ["gru_ra_bias", "gru_rb_bias", "gru_ra_initial_state", "gru_ra_go_backwards_seq",
                        "gru_rb_seq1_state1"],
    "keras3/lstm.json": ["lstm_bias", "lstm_initial_state", "lstm_seq1_state1"],
    "keras3/masks.json": ["mask_gru_ra_holes", "mask_gru_ra_right_zero_output", "mask_gru_rb_right_h0"],
    "keras3/stateful.json": ["stateful_gru_ra", "stateful_lstm", "stateful_gru_ra_mask_backwards"],
    "keras3/cells.json": ["grucell_ra_bias", "lstmcell_bias"],
    "keras2/gru.json": ["gru_ra_impl2_bias", "gru_rb_impl1_bias"],
    "keras2/cudnn.json": ["cudnngru_default", "cudnnlstm_seq_state", "cudnngru_stateful"],
    "keras2/stateful.json": ["stateful_gru_ra", "stateful_lstm"],
    "keras3/simple_rnn.json": ["simple_rnn_bias", "mask_simple_rnn_holes_h0_backwards", "stateful_simple_rnn",
                               "simplernncell_bias"],
    "keras2/simple_rnn.json": ["simple_rnn_time_major", "stateful_simple_rnn_initial_state"],
}


def nums(values):
    return " ".join(repr(float(v)) for v in values)


def tensor(t):
    shape = t["shape"]
    return "%d %s %d %s" % (len(shape), " ".join(str(d) for d in shape), len(t["data"]), nums(t["data"]))


def main():
    root, out_path = sys.argv[1], sys.argv[2]
    lines = []
    found = 0
    for rel, names in CASES.items():
        with open("%s/%s" % (root, rel)) as f:
            doc = json.load(f)
        dialect = 2 if doc["dialect"] == "keras2" else 3
        keras_version = doc["versions"]["keras"]
        by_name = {c["name"]: c for c in doc["cases"]}
        for name in names:
            c = by_name.get(name)
            if c is None:
                print("warning: %s has no case %s" % (rel, name), file=sys.stderr)
                continue
            found += 1
            lines.append("case %d %s/%s %r %s" % (dialect, rel.split("/")[0], name, float(c.get("tolerance", 1e-5)),
                                                   keras_version))
            lines.append("json " + json.dumps(c["layer"], separators=(",", ":")))
            lines.append("input_size %d" % int(c["input_size"]))
            for i, w in enumerate(c.get("weights", [])):
                lines.append("weight %d %s" % (i, tensor(w)))
            for call in c["calls"]:
                lines.append("call")
                rs = call.get("reset_states")
                if rs is None:
                    lines.append("reset none")
                elif len(rs) == 0:
                    lines.append("reset zero")
                else:
                    flat = [v for t in rs for v in t["data"]]
                    lines.append("reset set %d %d %s" % (len(rs), len(flat), nums(flat)))
                lines.append("input " + tensor(call["input"]))
                m = call.get("mask")
                if m is None:
                    lines.append("mask none")
                else:
                    lines.append("mask %d %s" % (len(m["data"]), " ".join("1" if v else "0" for v in m["data"])))
                init = call.get("initial_state") or []
                flat = [v for t in init for v in t["data"]]
                lines.append("init %d %d %s" % (len(init), len(flat), nums(flat)))
                lines.append("training %d" % (1 if call.get("training") else 0))
                for o in call["outputs"]:
                    lines.append("output %s %d %s" % (o["name"], len(o["data"]), nums(o["data"])))
            lines.append("end")
    if found < 15:
        sys.exit("error: only %d fixture cases found" % found)
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
