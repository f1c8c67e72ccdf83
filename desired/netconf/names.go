package netconf

import "strings"

// IsDNSLabel reports whether s is an RFC 1123 label, as namespaces are.
func IsDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// IsDNSSubdomain reports whether s is an RFC 1123 subdomain, as object names are.
func IsDNSSubdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for s != "" {
		label, rest, dot := strings.Cut(s, ".")
		if !IsDNSLabel(label) || dot && rest == "" {
			return false
		}
		s = rest
	}
	return true
}
