// recur quick start in Go: open a Keras model, run one sequence of token ids, print the prediction.
package main

import (
	"fmt"
	"log"
	"os"

	"recur.dev/recur"
)

func main() {
	path := "sentiment_keras3.keras"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	model, err := recur.OpenModel(path)
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()
	ids := []float32{12, 13, 18, 11, 15, 16, 5, 2, 6, 6} // the first sample of sentiment_inputs.npy
	probs, err := model.Predict(ids, 1, 10, nil)         // batch 1, 10 steps: P(negative), P(positive)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("prediction: %.9f %.9f\n", probs[0], probs[1]) // Keras: 0.999587297 0.000412621826
}
