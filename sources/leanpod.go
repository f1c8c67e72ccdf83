package sources

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// leanPod makes the Pod a plain YAML document v (simpleYAML's tree) holds
// straight into the form the informers keep (decodePod's): its metadata
// decoded through JSON as encoding/json reads it, and of the rest only
// spec.nodeName, spec.hostNetwork and status.phase, read from the tree. The
// rest of the document (containers, volumes, statuses: most of a pod) is
// never written as JSON nor read. ok is false where encoding/json might
// read the document otherwise or refuse it — a field of another type, a
// key that matches only ignoring case, metadata it does not take — and
// the document must go the JSON way, which gives the same pod or its
// error.
func leanPod(v *yamlValue, tm metav1.TypeMeta) (*corev1.Pod, bool) {
	meta, ok := field(v, "metadata")
	if !ok || meta == nil || meta.kind != 'm' {
		return nil, false
	}
	spec, ok1 := field(v, "spec")
	status, ok2 := field(v, "status")
	if !ok1 || !ok2 {
		return nil, false
	}
	p := &corev1.Pod{TypeMeta: tm}
	var ok3, ok4, ok5 bool
	p.Spec.NodeName, ok3 = stringField(spec, "nodeName")
	p.Spec.HostNetwork, ok4 = boolField(spec, "hostNetwork")
	phase, ok5 := stringField(status, "phase")
	if !ok3 || !ok4 || !ok5 {
		return nil, false
	}
	p.Status.Phase = corev1.PodPhase(phase)
	var m metav1.ObjectMeta
	if err := json.Unmarshal(meta.appendJSON(nil), &m); err != nil {
		return nil, false
	}
	p.ObjectMeta = leanMeta(m)
	return p, true
}

// field returns the value of key in mapping v (nil when absent, or when v
// is absent or null); ok is false where encoding/json would read v
// otherwise: v is not a mapping, or a key matches key only ignoring case.
func field(v *yamlValue, key string) (*yamlValue, bool) {
	switch {
	case v == nil || v.kind == 's' && v.raw == "null":
		return nil, true
	case v.kind != 'm':
		return nil, false
	}
	var found *yamlValue
	for i := range v.keys {
		e := &v.keys[i]
		switch {
		case e.key == key:
			found = &e.val
		case strings.EqualFold(e.key, key):
			return nil, false
		}
	}
	return found, true
}

// stringField reads key of mapping v as a string: a string, or null or
// absent for "".
func stringField(v *yamlValue, key string) (string, bool) {
	f, ok := field(v, key)
	switch {
	case !ok:
		return "", false
	case f == nil || f.kind == 's' && f.raw == "null":
		return "", true
	case f.kind == 't':
		return f.raw, true
	}
	return "", false
}

// boolField reads key of mapping v as a bool: true or false, or null or
// absent for false.
func boolField(v *yamlValue, key string) (bool, bool) {
	f, ok := field(v, key)
	switch {
	case !ok:
		return false, false
	case f == nil:
		return false, true
	case f.kind == 's' && (f.raw == "null" || f.raw == "false"):
		return false, true
	case f.kind == 's' && f.raw == "true":
		return true, true
	}
	return false, false
}
