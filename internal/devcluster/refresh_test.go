package devcluster

import "testing"

func TestRunsWith(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cmdline string
		args    []string
		want    bool
	}{
		{"same flags", "/bin/kcm\x00--a=1\x00--b\x00", []string{"--a=1", "--b"}, true},
		{"a flag added since", "/bin/kcm\x00--a=1\x00", []string{"--a=1", "--b"}, false},
		{"a flag's value changed", "/bin/kcm\x00--a=1\x00--b\x00", []string{"--a=2", "--b"}, false},
		{"the same flags in another order", "/bin/kcm\x00--b\x00--a=1\x00", []string{"--a=1", "--b"}, false},
		{"no flags", "/bin/kcm\x00", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runsWith([]byte(tc.cmdline), tc.args); got != tc.want {
				t.Errorf("runsWith(%q, %q) = %v, want %v", tc.cmdline, tc.args, got, tc.want)
			}
		})
	}
}
