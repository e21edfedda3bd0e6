package cli

import (
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

func init() { register(newInitCmd) }

// inittmpl holds the files `slipway init` writes: a group file, whose {{GROUP}} becomes the
// group's name, and what it names (a rootfs per node, config files).
//
//go:embed inittmpl
var inittmpl embed.FS

// initExamples are the --example values, by the directory of inittmpl they are written from.
var initExamples = []string{"one", "full"}

// initTokenFile is the file of a made-up secret the full example's Secrets read (fromFile): it
// is written at init, random, never taken from the embedded templates.
const initTokenFile = "secrets/token"

// newInitCmd is `slipway init [DIR]`: a first group file without reading the reference.
func newInitCmd(_ *Globals) *cobra.Command {
	var example, group string
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a commented group file with one node (--example full: every field) into DIR",
		Long: "Writes DIR/slipway.yaml (DIR defaults to the current directory) and the files it names:\n" +
			"a commented group file with one node, or with --example full every field of the file,\n" +
			"which validate accepts and which deploys on the dev environment as it is. The group is\n" +
			"named after DIR unless --group says otherwise. An existing slipway.yaml is never\n" +
			"overwritten; the other files are written only where missing.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return runInit(dir, example, group, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&example, "example", "one", "which file: one (a node) or full (every field)")
	cmd.Flags().StringVar(&group, "group", "", "the group's name, a DNS label (default: DIR's name)")
	return cmd
}

func runInit(dir, example, group string, stdout, stderr io.Writer) error {
	if !slices.Contains(initExamples, example) {
		return fmt.Errorf("--example %q: want one of %s", example, strings.Join(initExamples, ", "))
	}
	if group == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("init %s: %w", dir, err)
		}
		group = groupName(filepath.Base(abs))
	} else if !dnsLabel.MatchString(group) {
		return fmt.Errorf("--group %q: not a DNS label (lowercase letters, digits and '-', at most 63)", group)
	}
	file := filepath.Join(dir, "slipway.yaml")
	if _, err := os.Lstat(file); err == nil {
		return fmt.Errorf("init: %s exists; init writes a new group file only (another DIR, or remove it)", file)
	}
	root := path.Join("inittmpl", example)
	var wrote []string
	err := fs.WalkDir(inittmpl, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := inittmpl.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, root+"/")
		if rel == "slipway.yaml" {
			b = []byte(strings.ReplaceAll(string(b), "{{GROUP}}", group))
		}
		ok, err := writeNew(filepath.Join(dir, filepath.FromSlash(rel)), b, 0o644)
		if ok {
			wrote = append(wrote, rel)
		}
		return err
	})
	if err == nil && example == "full" {
		var ok bool
		if ok, err = writeNew(filepath.Join(dir, initTokenFile), randomToken(), 0o600); ok {
			wrote = append(wrote, initTokenFile)
		}
	}
	if err != nil {
		return fmt.Errorf("init %s: %w", dir, err)
	}
	for _, w := range wrote {
		fmt.Fprintln(stdout, filepath.Join(dir, filepath.FromSlash(w)))
	}
	fmt.Fprintf(stderr, "init: group %q in %s; next: slipway -f %s plan, then apply --yes\n", group, file, file)
	return nil
}

// writeNew writes a file that does not exist yet (false: it existed and is left as it is).
func writeNew(p string, b []byte, mode os.FileMode) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return false, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return false, err
	}
	return true, f.Close()
}

func randomToken() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return []byte(hex.EncodeToString(b) + "\n")
}

var (
	dnsLabel   = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	notInLabel = regexp.MustCompile(`[^a-z0-9]+`)
)

// groupName makes a DNS label of a directory's name ("My App" → "my-app"), "demo" when
// nothing of it is left.
func groupName(base string) string {
	s := strings.TrimLeft(notInLabel.ReplaceAllString(strings.ToLower(base), "-"), "-0123456789")
	s = strings.TrimRight(s, "-")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	if s == "" {
		return "demo"
	}
	return s
}
