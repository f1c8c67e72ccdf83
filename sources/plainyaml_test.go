package sources

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/ovn-sync/ovn-sync/desired"
	"pgregory.net/rapid"
)

// yamlLinesSeen are the lines a stream is made of in TestSplitPlainYAML:
// separators the reader takes and refuses, near misses, and documents'
// lines.
var yamlLinesSeen = []string{
	"---", "--- ", "---  # a comment", "---#x", "--- x", "---x", "----", " ---", "...",
	"a: 1", "  b: two", "- c", "", " ", "# comment", "--- \u00a0", "kind: Pod",
}

// splitPlainYAML gives the documents kubectl's reader gives, whenever it
// takes a stream.
func TestSplitPlainYAML(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lines := rapid.SliceOfN(rapid.SampledFrom(yamlLinesSeen), 0, 12).Draw(t, "lines")
		eol := rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(t, "eol")
		data := strings.Join(lines, eol)
		if rapid.Bool().Draw(t, "newline at the end") {
			data += eol
		}
		want, wantErr := readYAMLDocs([]byte(data))
		got, ok := splitPlainYAML([]byte(data))
		switch {
		case !ok && wantErr == nil && eol == "\n":
			t.Fatalf("%q: not taken, but the reader reads it", data)
		case !ok:
			return
		case wantErr != nil:
			t.Fatalf("%q: taken, but the reader fails: %v", data, wantErr)
		case len(got) != len(want):
			t.Fatalf("%q: %q, the reader %q", data, got, want)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%q: document %d is %q, the reader's %q", data, i, got[i], want[i])
			}
		}
	})
}

// The documents are slices of the stream, not copies, but the last when a
// newline must be added: appending to one document does not write into
// the next.
func TestSplitPlainYAMLAppends(t *testing.T) {
	data := []byte("a: 1\n---\nb: 2")
	docs, ok := splitPlainYAML(data)
	if !ok || len(docs) != 2 {
		t.Fatalf("got %q, %v", docs, ok)
	}
	_ = append(docs[0], 'x')
	if string(data) != "a: 1\n---\nb: 2" || string(docs[1]) != "b: 2\n" {
		t.Fatalf("appending to a document wrote into the stream: %q, %q", data, docs[1])
	}
}

// A parser's room is reused, document after document: what a document
// gave is not changed by parsing the next.
func TestParserReuse(t *testing.T) {
	var p yamlLines
	first, second := []byte(kubectlPod(1)), []byte(kubectlPod(2))
	var in desired.Inputs
	if _, _, _, done := decodePlainYAML(&p, first, &in); !done {
		t.Fatal("the first pod is not read straight")
	}
	pod := in.Pods[0].DeepCopy()
	v, ok := p.parse(second)
	if !ok || v == nil {
		t.Fatal("the second pod is not plain")
	}
	var again desired.Inputs
	if _, _, _, done := decodePlainYAML(&yamlLines{}, first, &again); !done {
		t.Fatal("the first pod is not read straight by a new parser")
	}
	if !reflect.DeepEqual(in.Pods[0], pod) || !reflect.DeepEqual(in.Pods[0], again.Pods[0]) {
		t.Fatalf("the first pod changed once the parser read the second:\n%+v\nwas\n%+v", in.Pods[0], pod)
	}
	// The tree of the second is good until the parser reads again.
	if raw, _, ok := simpleYAML(second); !ok || string(v.appendJSON(nil)) != string(raw) {
		t.Fatalf("the reused parser's tree of the second pod writes %s, a new parser's %s", v.appendJSON(nil), raw)
	}
}

// A pod read straight keeps none of its document's text (a string of the
// tree would keep the whole document, about a kilobyte a pod).
func TestLeanPodKeepsNoText(t *testing.T) {
	var p yamlLines
	var in desired.Inputs
	if _, _, _, done := decodePlainYAML(&p, []byte(kubectlPod(7)), &in); !done {
		t.Fatal("the pod is not read straight")
	}
	text := unsafe.StringData(p.text)
	inText := func(s string) bool {
		d := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return len(s) > 0 && d >= uintptr(unsafe.Pointer(text)) && d < uintptr(unsafe.Pointer(text))+uintptr(len(p.text))
	}
	n := 0
	eachString(reflect.ValueOf(in.Pods[0]), func(path, s string) {
		n++
		if inText(s) {
			t.Errorf("%s (%q) is part of the document's text", path, s)
		}
	})
	if n < 10 {
		t.Fatalf("%d strings read: the walk missed the pod", n)
	}
}

// eachString calls f with every string v holds, and where.
func eachString(v reflect.Value, f func(path, s string)) {
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.String:
			f(path, v.String())
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), path)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i), fmt.Sprint(path, "[", i, "]"))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Key(), path+" key")
				walk(it.Value(), fmt.Sprint(path, "[", it.Key(), "]"))
			}
		}
	}
	walk(v, "pod")
}
