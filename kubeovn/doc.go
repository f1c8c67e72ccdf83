// Package kubeovn holds the API types of kube-ovn's custom resources
// (kubeovn.io/v1) that ovn-sync reads, reduced to the fields it reads and
// spelled as kube-ovn spells them, so that manifests and informers decode
// them without kube-ovn's client module. It has no behaviour: desired
// interprets the objects, sources reads them.
package kubeovn
