module recur.dev/recur

go 1.19
