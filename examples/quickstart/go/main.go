// recur quick start: open a Keras model, run one sequence of ten token ids, print its probabilities.
package main

import (
	"fmt"
	"log"
	"os"

	"recur.dev/recur"
)

func main() {
	path := "examples/models/sentiment_keras3.keras"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	model, err := recur.OpenModel(path)
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()
	ids := []float32{12, 13, 18, 11, 15, 16, 5, 2, 6, 6}
	probs, err := model.Predict(ids, 1, 10, nil) // batch 1, 10 timesteps, no mask
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.9f %.9f\n", probs[0], probs[1])
}
