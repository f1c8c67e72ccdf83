package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// pages are the Markdown files whose links are checked, from this
// directory.
var pages = []string{"../README.md", "*.md", "../bench/RESULTS.md"}

// TestLinks fails for every relative link that names a missing file, or a
// heading its Markdown file does not have.
func TestLinks(t *testing.T) {
	var files []string
	for _, p := range pages {
		m, err := filepath.Glob(p)
		if err != nil || len(m) == 0 {
			t.Fatalf("no page matches %s (%v)", p, err)
		}
		files = append(files, m...)
	}
	anchors := map[string][]string{} // Markdown file -> its headings' anchors
	anchorsOf := func(path string) ([]string, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[path] = a
		return a, nil
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range relativeLinks(string(b)) {
			checked++
			path, frag, _ := strings.Cut(l.target, "#")
			target := f
			if path != "" {
				target = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s:%d: link %q: no file %s", f, l.line, l.target, target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			a, err := anchorsOf(target)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", f, l.line, l.target, err)
				continue
			}
			if !slices.Contains(a, frag) {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", f, l.line, l.target, target, frag)
			}
		}
	}
	if checked == 0 {
		t.Fatalf("no relative links found in %v", files)
	}
}

type link struct {
	target string
	line   int
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkText   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// relativeLinks returns the inline links of a Markdown text that point
// into the repository: not into a code block or span, not to a URL.
func relativeLinks(md string) []link {
	var out []link
	inFence := false
	for i, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, link{target, i + 1})
		}
	}
	return out
}

// headingAnchors returns the anchors of a Markdown text's ATX headings
// (those in code blocks are not headings), a repeated one suffixed -1,
// -2, ... as GitHub does.
func headingAnchors(md string) []string {
	var out []string
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		a := anchor(m[2])
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

// anchor is the anchor GitHub gives a heading: its text (a link's text
// without the target) in lower case, spaces as '-', every character
// dropped that is not a letter, a number, '-' or '_'.
func anchor(text string) string {
	text = linkText.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestAnchor(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Addresses: never lost, held twice or changed under a running guest", "addresses-never-lost-held-twice-or-changed-under-a-running-guest"},
		{"Flags (plan and apply)", "flags-plan-and-apply"},
		{"kube-ovn's networks as written", "kube-ovns-networks-as-written"},
		{"The Logical_Switch_Port view", "the-logical_switch_port-view"},
		{"One engine (`desired.Engine`): a Build of the owners that are dirty", "one-engine-desiredengine-a-build-of-the-owners-that-are-dirty"},
		{"(a)–(f) at 1k", "af-at-1k"},
		{"See [Run mode](run-mode.md)", "see-run-mode"},
	} {
		if got := anchor(c.heading); got != c.want {
			t.Errorf("anchor(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
	md := "# Title\n\n```sh\n# a comment, not a heading\n```\n\n## Notes\n\n## Notes\n"
	if got, want := headingAnchors(md), []string{"title", "notes", "notes-1"}; !slices.Equal(got, want) {
		t.Errorf("headingAnchors = %q, want %q", got, want)
	}
	md = "[a](a.md) `[b](b.md)` ![c](c.svg) [d](https://x.org/d) [e](#e)\n```\n[f](f.md)\n```\n"
	var got []string
	for _, l := range relativeLinks(md) {
		got = append(got, l.target)
	}
	if want := []string{"a.md", "c.svg", "#e"}; !slices.Equal(got, want) {
		t.Errorf("relativeLinks = %q, want %q", got, want)
	}
}
