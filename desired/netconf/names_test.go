package netconf

import (
	"strings"
	"testing"
)

func TestKubernetesNames(t *testing.T) {
	for _, tc := range []struct {
		s             string
		label, domain bool
	}{
		{"web-1", true, true},
		{"a", true, true},
		{"web.example", false, true},
		{"", false, false},
		{"-web", false, false},
		{"web-", false, false},
		{"Web", false, false},
		{"wéb", false, false},
		{"web.", false, false},
		{".web", false, false},
		{"a..b", false, false},
		{strings.Repeat("a", 63), true, true},
		{strings.Repeat("a", 64), false, false},
		{strings.Repeat("a", 63) + "." + strings.Repeat("b", 63), false, true},
		{strings.Repeat("a.", 126) + "a", false, true},   // 253 bytes
		{strings.Repeat("a.", 126) + "ab", false, false}, // 254 bytes
	} {
		if got := IsDNSLabel(tc.s); got != tc.label {
			t.Errorf("IsDNSLabel(%q) = %v, want %v", tc.s, got, tc.label)
		}
		if got := IsDNSSubdomain(tc.s); got != tc.domain {
			t.Errorf("IsDNSSubdomain(%q) = %v, want %v", tc.s, got, tc.domain)
		}
	}
}
