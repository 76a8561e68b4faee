package image

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Archive is a docker-archive image tarball (what `docker save` and
// `buildah push docker-archive:` write, and `ctr images import` reads).
type Archive struct {
	// Path is the tarball.
	Path string
	// RepoTags are the names the tarball gives the image.
	RepoTags []string
	// Config is the image's configuration.
	Config Config
	// layers are the layer files inside the tarball, base first.
	layers []string
}

// Config is the part of an image configuration (OCI image-spec config) the
// Dockerfile's instructions set.
type Config struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Env        []string          `json:"Env"`
		WorkingDir string            `json:"WorkingDir"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	History []struct {
		CreatedBy  string `json:"created_by"`
		EmptyLayer bool   `json:"empty_layer"`
	} `json:"history"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// Open reads a docker-archive's manifest and image configuration.
func Open(tarball string) (*Archive, error) {
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := readMember(tarball, "manifest.json", func(r io.Reader) error { return json.NewDecoder(r).Decode(&manifest) }); err != nil {
		return nil, err
	}
	if len(manifest) != 1 {
		return nil, fmt.Errorf("%s: %d images in manifest.json, want 1", tarball, len(manifest))
	}
	a := &Archive{Path: tarball, RepoTags: manifest[0].RepoTags, layers: manifest[0].Layers}
	if err := readMember(tarball, manifest[0].Config, func(r io.Reader) error { return json.NewDecoder(r).Decode(&a.Config) }); err != nil {
		return nil, err
	}
	if len(a.layers) != len(a.Config.RootFS.DiffIDs) {
		return nil, fmt.Errorf("%s: %d layers but %d diff IDs", tarball, len(a.layers), len(a.Config.RootFS.DiffIDs))
	}
	return a, nil
}

// readMember calls fn with the tarball's member name.
func readMember(tarball, name string, fn func(io.Reader) error) error {
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: no %s", tarball, name)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tarball, err)
		}
		if path.Clean(h.Name) == path.Clean(name) {
			if err := fn(tr); err != nil {
				return fmt.Errorf("%s: %s: %w", tarball, name, err)
			}
			return nil
		}
	}
}

// Unpack writes the image's file system into dir, layer over layer as a
// container runtime does (whiteouts delete what lower layers had), with the
// owners and modes of the image. It needs root for the owners.
func (a *Archive) Unpack(dir string) error {
	for _, layer := range a.layers {
		err := readMember(a.Path, layer, func(r io.Reader) error {
			br, err := decompressed(r)
			if err != nil {
				return err
			}
			return applyLayer(tar.NewReader(br), dir)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// decompressed returns r, gunzipped if it is gzip (docker-archive layers
// may be either).
func decompressed(r io.Reader) (io.Reader, error) {
	buf := make([]byte, 2)
	n, err := io.ReadFull(r, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	full := io.MultiReader(strings.NewReader(string(buf[:n])), r)
	if n == 2 && buf[0] == 0x1f && buf[1] == 0x8b {
		return gzip.NewReader(full)
	}
	return full, nil
}

// applyLayer extracts one layer into root.
func applyLayer(tr *tar.Reader, root string) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name)
		if name == "/" {
			continue
		}
		target := filepath.Join(root, filepath.FromSlash(name))
		base := path.Base(name)
		switch {
		case base == ".wh..wh..opq":
			// Opaque directory: the lower layers' contents are gone.
			entries, err := os.ReadDir(filepath.Dir(target))
			if err != nil && !os.IsNotExist(err) {
				return err
			}
			for _, e := range entries {
				if err := os.RemoveAll(filepath.Join(filepath.Dir(target), e.Name())); err != nil {
					return err
				}
			}
			continue
		case strings.HasPrefix(base, ".wh."):
			if err := os.RemoveAll(filepath.Join(filepath.Dir(target), strings.TrimPrefix(base, ".wh."))); err != nil {
				return err
			}
			continue
		}
		if err := extract(tr, h, root, target); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

// extract writes one tar entry at target.
func extract(tr *tar.Reader, h *tar.Header, root, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	if fi, err := os.Lstat(target); err == nil && !(fi.IsDir() && h.Typeflag == tar.TypeDir) {
		if err := os.RemoveAll(target); err != nil {
			return err
		}
	}
	mode := os.FileMode(h.Mode) & os.ModePerm
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(target, mode); err != nil {
			return err
		}
	case tar.TypeReg:
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case tar.TypeSymlink:
		return os.Symlink(h.Linkname, target)
	case tar.TypeLink:
		return os.Link(filepath.Join(root, filepath.FromSlash(path.Clean("/"+h.Linkname))), target)
	default:
		// Device nodes and FIFOs: a runtime makes /dev itself, and the
		// checks need none.
		return nil
	}
	if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
		return err
	}
	// Chown clears setuid bits; the mode goes last, with them.
	return os.Chmod(target, os.FileMode(h.Mode)&os.ModePerm|modeBits(h.Mode))
}

// modeBits maps the tar header's setuid, setgid and sticky bits to Go's.
func modeBits(m int64) os.FileMode {
	var fm os.FileMode
	if m&0o4000 != 0 {
		fm |= os.ModeSetuid
	}
	if m&0o2000 != 0 {
		fm |= os.ModeSetgid
	}
	if m&0o1000 != 0 {
		fm |= os.ModeSticky
	}
	return fm
}
