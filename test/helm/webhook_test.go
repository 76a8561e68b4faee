package helm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestChartWebhookTLS renders each alertWebhook.tls.mode: the operator's
// flags, the mounted certificate Secret, and what the operator may do with
// Secrets (create and update only for the certificate it generates).
func TestChartWebhookTLS(t *testing.T) {
	const mountedCert, mountedKey = "--alert-webhook-cert-file=/etc/kmaint/alert-webhook-tls/tls.crt", "--alert-webhook-key-file=/etc/kmaint/alert-webhook-tls/tls.key"
	for name, c := range map[string]struct {
		ns, values string
		// wantArgs are the operator's --alert-webhook-cert*/insecure flags.
		wantArgs []string
		// wantVolume is the certificate Secret mounted; empty for none.
		wantVolume string
		// wantVerbs are the operator's verbs on Secrets of its namespace.
		wantVerbs []string
	}{
		"generate by default": {
			wantArgs:  []string{"--alert-webhook-cert-secret=kmaint-system/kmaint-alert-webhook-tls"},
			wantVerbs: []string{"create", "get", "update"},
		},
		"generate into another Secret in another namespace": {
			ns: "maintenance", values: "alertWebhook: {tls: {secretName: my-tls}}",
			wantArgs:  []string{"--alert-webhook-cert-secret=maintenance/my-tls"},
			wantVerbs: []string{"create", "get", "update"},
		},
		"a Secret of yours such as cert-manager's": {
			values:     "alertWebhook: {tls: {mode: secret, secretName: cm-tls}}",
			wantArgs:   []string{mountedCert, mountedKey},
			wantVolume: "cm-tls",
			wantVerbs:  []string{"get"},
		},
		"plain HTTP": {
			values:    "alertWebhook: {tls: {mode: none}}",
			wantArgs:  []string{"--alert-webhook-insecure-http"},
			wantVerbs: []string{"get"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			ns := c.ns
			if ns == "" {
				ns = namespace
			}
			r := render(t, ns, c.values)
			spec := r.operator().Spec.Template.Spec
			ctr := spec.Containers[0]
			var got []string
			for _, arg := range ctr.Args {
				if strings.HasPrefix(arg, "--alert-webhook-cert") || strings.HasPrefix(arg, "--alert-webhook-key") || strings.HasPrefix(arg, "--alert-webhook-insecure") {
					got = append(got, arg)
				}
			}
			if !slices.Equal(got, c.wantArgs) {
				t.Errorf("TLS flags %q, want %q", got, c.wantArgs)
			}
			switch {
			case c.wantVolume == "" && (len(spec.Volumes) > 0 || len(ctr.VolumeMounts) > 0):
				t.Errorf("volumes %v, mounts %v; want none", spec.Volumes, ctr.VolumeMounts)
			case c.wantVolume != "":
				if len(spec.Volumes) != 1 || spec.Volumes[0].Secret == nil || spec.Volumes[0].Secret.SecretName != c.wantVolume {
					t.Errorf("volumes %+v, want Secret %s", spec.Volumes, c.wantVolume)
				}
				want := corev1.VolumeMount{Name: spec.Volumes[0].Name, MountPath: "/etc/kmaint/alert-webhook-tls", ReadOnly: true}
				if len(ctr.VolumeMounts) != 1 || !reflect.DeepEqual(ctr.VolumeMounts[0], want) {
					t.Errorf("mounts %+v, want %+v", ctr.VolumeMounts, want)
				}
			}
			role := &rbacv1.Role{}
			r.into("Role/"+ns+"/kmaint-operator", role)
			var verbs []string
			for _, rule := range role.Rules {
				if slices.Contains(rule.Resources, "secrets") {
					verbs = append(verbs, rule.Verbs...)
				}
			}
			if !slices.Equal(verbs, c.wantVerbs) {
				t.Errorf("verbs on Secrets %v, want %v", verbs, c.wantVerbs)
			}
			// What RBAC lets it create is confined by admission to the
			// objects it makes, in its namespace, by their names (in the
			// modes that make none, RBAC lets it create nothing).
			vap, ok := r.objs["ValidatingAdmissionPolicy/kmaint-operator-creates"]
			if !ok {
				t.Fatal("no ValidatingAdmissionPolicy kmaint-operator-creates")
			}
			secret := "kmaint-alert-webhook-tls"
			if m := regexp.MustCompile(`secretName: ([a-z0-9-]+)`).FindStringSubmatch(c.values); m != nil {
				secret = m[1]
			}
			body := fmt.Sprint(vap.Object["spec"])
			for _, want := range []string{
				"'system:serviceaccount:" + ns + ":kmaint-operator'", "request.namespace == '" + ns + "'",
				"variables.name == '" + secret + "'", "variables.name == '" + strings.TrimSuffix(secret, "-tls") + "-ca'",
			} {
				if !strings.Contains(body, want) {
					t.Errorf("kmaint-operator-creates lacks %s: %s", want, body)
				}
			}
		})
	}
}

// An unknown alertWebhook.tls.mode fails the render, naming the value,
// rather than serving something nobody asked for.
func TestChartWebhookTLSModeUnknown(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("alertWebhook: {tls: {mode: https}}"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(helmAssets(t), "helm"), "template", "kmaint", chartDir(), "--namespace", namespace, "--values", values).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `alertWebhook.tls.mode is "https": want generate, secret or none`) {
		t.Errorf("helm template with tls.mode https: %v\n%s", err, out)
	}
}

// A host command directory that is not a clean absolute path of its own
// fails the render, naming the value, rather than mounting / or a relative
// path writable into the init container.
func TestChartHostCommandDirRefused(t *testing.T) {
	for _, dir := range []string{"/", "opt/kmaint/bin", "/opt/../etc", "/opt/kmaint/bin/"} {
		values := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(values, fmt.Appendf(nil, "daemon: {hostCommandDir: %q}", dir), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(filepath.Join(helmAssets(t), "helm"), "template", "kmaint", chartDir(), "--namespace", namespace, "--values", values).CombinedOutput()
		if want := fmt.Sprintf("daemon.hostCommandDir is %q: want an absolute path", dir); err == nil || !strings.Contains(string(out), want) {
			t.Errorf("helm template with hostCommandDir %q: %v\n%s", dir, err, out)
		}
	}
}
