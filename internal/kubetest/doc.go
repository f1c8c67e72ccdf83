// Package kubetest runs a real kube-apiserver and etcd on loopback for
// integration tests, with minimal KubeVirt, Multus and kube-ovn (Subnet, IP) CRDs
// installed.
//
//	srv := kubetest.Start(t) // skips (fails under CI) when the binaries cannot be had
//	srv.Kube.CoreV1().Pods("default").Create(...)
//	exec.Command("ovn-sync", "run", "--kubeconfig", srv.Kubeconfig, ...)
//
// The binaries come from hack/kube-binaries.sh, which builds them from the Go
// module proxy once and caches them outside the clone. No controllers run:
// there is no scheduler, garbage collector or service-account controller, so
// tests set spec.nodeName themselves and write status through the status
// subresource.
package kubetest
