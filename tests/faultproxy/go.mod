// faultproxy: a fault-injecting HTTPS proxy between a client (the operator) and the real
// kube-apiserver (README.md). Standard library only.
module trainbench.dev/faultproxy

go 1.22
