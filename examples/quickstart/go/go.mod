module example.com/quickstart

go 1.19

require recur.dev/recur v0.9.0

// The module is not on a proxy: it is installed with recur (<prefix>/share/recur/go/recur).
replace recur.dev/recur => /usr/share/recur/go/recur
