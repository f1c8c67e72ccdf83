package kubetest

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestStart(t *testing.T) {
	s := Start(t)
	s.Namespace("t1")
	gvr := schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	s.Create(gvr, `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"vm1","namespace":"t1"},"spec":{"runStrategy":"Halted"}}`)
	l, err := s.Dynamic.Resource(gvr).Namespace("t1").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("List(virtualmachines) = %v, %v; want 1 item", l, err)
	}
}
