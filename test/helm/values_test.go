package helm

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kmaint/kmaint/test/manifests"
)

// rendered is one render of the chart, by id, with typed accessors.
type rendered struct {
	t    *testing.T
	objs map[string]*unstructured.Unstructured
}

func render(t *testing.T, ns, values string) rendered {
	t.Helper()
	return rendered{t: t, objs: byID(t, template(t, ns, values))}
}

func (r rendered) into(key string, obj any) {
	r.t.Helper()
	u, ok := r.objs[key]
	if !ok {
		r.t.Fatalf("%s not rendered; rendered: %v", key, ids(r.objs))
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		r.t.Fatalf("%s: %v", key, err)
	}
}

func (r rendered) operator() *appsv1.Deployment {
	r.t.Helper()
	d := &appsv1.Deployment{}
	r.into("Deployment/"+namespaceOf(r)+"/kmaint-operator", d)
	return d
}

func (r rendered) daemon() *appsv1.DaemonSet {
	r.t.Helper()
	d := &appsv1.DaemonSet{}
	r.into("DaemonSet/"+namespaceOf(r)+"/kmaint-daemon", d)
	return d
}

// namespaceOf is the release namespace of a render, the Deployment's.
func namespaceOf(r rendered) string {
	for _, u := range r.objs {
		if u.GetKind() == "Deployment" {
			return u.GetNamespace()
		}
	}
	r.t.Fatal("no Deployment rendered")
	return ""
}

func appVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(chartDir() + "/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	return chart.AppVersion
}

// TestChartImage: one image for the operator and the daemon, tagged with
// the chart's appVersion unless image.tag or image.digest says otherwise,
// with the pull policy and secrets of image.
func TestChartImage(t *testing.T) {
	for name, c := range map[string]struct {
		values string
		// image is the image both containers run, "" for the appVersion tag.
		image   string
		policy  corev1.PullPolicy
		secrets []corev1.LocalObjectReference
	}{
		"defaults": {"", "", "", nil},
		"tag": {"image: {tag: v9.9.9, pullPolicy: Always, pullSecrets: [{name: regcred}]}", "ghcr.io/kmaint/kmaint:v9.9.9", corev1.PullAlways,
			[]corev1.LocalObjectReference{{Name: "regcred"}}},
		"digest": {"image: {repository: registry.example/kmaint, tag: v1, digest: 'sha256:" + strings.Repeat("ab", 32) + "'}",
			"registry.example/kmaint@sha256:" + strings.Repeat("ab", 32), "", nil},
	} {
		t.Run(name, func(t *testing.T) {
			if c.image == "" {
				c.image = "ghcr.io/kmaint/kmaint:" + appVersion(t)
			}
			r := render(t, namespace, c.values)
			for _, spec := range []corev1.PodSpec{r.operator().Spec.Template.Spec, r.daemon().Spec.Template.Spec} {
				if !slices.Equal(spec.ImagePullSecrets, c.secrets) {
					t.Errorf("image pull secrets %v, want %v", spec.ImagePullSecrets, c.secrets)
				}
				for _, ctr := range spec.Containers {
					if ctr.Image != c.image || ctr.ImagePullPolicy != c.policy {
						t.Errorf("container %s: image %q pull policy %q, want %q %q", ctr.Name, ctr.Image, ctr.ImagePullPolicy, c.image, c.policy)
					}
				}
			}
		})
	}
}

// TestChartValues renders the chart with each set of values and checks
// the objects they change.
func TestChartValues(t *testing.T) {
	for name, c := range map[string]struct {
		values string
		ns     string
		check  func(t *testing.T, r rendered)
	}{
		// The hooks elsewhere, under an account and a class of the
		// installer's: the policy guards that namespace, the operator is
		// told both, and the chart makes neither, nor confines a class it
		// did not make.
		"hooks elsewhere": {
			values: `
hooks:
  namespace: maint-hooks
  serviceAccount: {name: upgrader, create: false}
  priorityClass: {name: maintenance-critical, create: false}
`,
			check: func(t *testing.T, r rendered) {
				args := r.operator().Spec.Template.Spec.Containers[0].Args
				for _, arg := range []string{"--hooks-namespace=maint-hooks", "--hooks-service-account=upgrader", "--hooks-priority-class=maintenance-critical"} {
					if !slices.Contains(args, arg) {
						t.Errorf("args %q lack %s", args, arg)
					}
				}
				for _, key := range []string{"ServiceAccount/maint-hooks/upgrader", "PriorityClass/maintenance-critical",
					"ValidatingAdmissionPolicy/kmaint-hook-priority-class", "ValidatingAdmissionPolicyBinding/kmaint-hook-priority-class"} {
					if _, ok := r.objs[key]; ok {
						t.Errorf("%s rendered", key)
					}
				}
				vap := r.objs["ValidatingAdmissionPolicy/kmaint-hooks-namespace"]
				if vap == nil {
					t.Fatal("no admission policy kmaint-hooks-namespace")
				}
				sel, _, _ := unstructured.NestedStringMap(vap.Object, "spec", "matchConstraints", "namespaceSelector", "matchLabels")
				if sel["kubernetes.io/metadata.name"] != "maint-hooks" {
					t.Errorf("the hooks namespace's policy guards %v, not maint-hooks", sel)
				}
			},
		},
		"hooks' account and class made by the chart": {
			values: `
hooks:
  serviceAccount: {name: upgrader}
  priorityClass: {name: maintenance-critical, value: 5000}
`,
			check: func(t *testing.T, r rendered) {
				var sa corev1.ServiceAccount
				r.into("ServiceAccount/kmaint-hooks/upgrader", &sa)
				if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
					t.Error("the hooks' service account mounts its token into every hook pod")
				}
				var pc schedulingv1.PriorityClass
				r.into("PriorityClass/maintenance-critical", &pc)
				if pc.Value != 5000 || pc.GlobalDefault {
					t.Errorf("PriorityClass value %d, globalDefault %v", pc.Value, pc.GlobalDefault)
				}
				conds, _, _ := unstructured.NestedSlice(r.objs["ValidatingAdmissionPolicy/kmaint-hook-priority-class"].Object, "spec", "matchConditions")
				if len(conds) == 0 || !strings.Contains(conds[0].(map[string]any)["expression"].(string), "'maintenance-critical'") {
					t.Errorf("the priority class's policy does not name it: %v", conds)
				}
			},
		},
		"operator": {
			values: `
operator:
  replicas: 3
  resources: {limits: {memory: 1Gi}}
  extraArgs: [--zap-log-level=debug]
  nodeSelector: {kubernetes.io/os: linux}
prometheus: {url: "http://prometheus-operated.monitoring:9090"}
`,
			check: func(t *testing.T, r rendered) {
				d := r.operator()
				if *d.Spec.Replicas != 3 {
					t.Errorf("replicas %d, want 3", *d.Spec.Replicas)
				}
				ctr := d.Spec.Template.Spec.Containers[0]
				for _, arg := range []string{"--zap-log-level=debug", "--prometheus-url=http://prometheus-operated.monitoring:9090"} {
					if !slices.Contains(ctr.Args, arg) {
						t.Errorf("args %q lack %s", ctr.Args, arg)
					}
				}
				if got := ctr.Resources.Limits.Memory(); !got.Equal(resource.MustParse("1Gi")) {
					t.Errorf("memory limit %s, want 1Gi", got)
				}
				if got := d.Spec.Template.Spec.NodeSelector["kubernetes.io/os"]; got != "linux" {
					t.Errorf("nodeSelector %v", d.Spec.Template.Spec.NodeSelector)
				}
			},
		},
		// Ingress only on the ports kmaint listens on, from the peers
		// given; the selectors pick each pod.
		"network policy": {
			values: `
networkPolicy:
  enabled: true
  metricsFrom: [{namespaceSelector: {matchLabels: {team: observability}}}]
  alertsFrom: [{podSelector: {matchLabels: {app: alertmanager}}, namespaceSelector: {}}]
`,
			check: func(t *testing.T, r rendered) {
				for name, wantPorts := range map[string][]string{"kmaint-operator": {"metrics", "alerts"}, "kmaint-daemon": {"metrics"}} {
					np := &networkingv1.NetworkPolicy{}
					r.into("NetworkPolicy/"+namespace+"/"+name, np)
					if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] != name || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
						t.Errorf("%s selects %v for %v; want its own pods, ingress", name, np.Spec.PodSelector, np.Spec.PolicyTypes)
					}
					var ports []string
					for _, rule := range np.Spec.Ingress {
						if len(rule.From) == 0 {
							t.Errorf("%s: a rule open to every peer: %+v", name, rule)
						}
						for _, p := range rule.Ports {
							ports = append(ports, p.Port.String())
						}
					}
					if !slices.Equal(ports, wantPorts) {
						t.Errorf("%s opens ports %v, want %v", name, ports, wantPorts)
					}
				}
				// The ports are named as the pods name them.
				if !slices.ContainsFunc(r.daemon().Spec.Template.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" }) ||
					!slices.ContainsFunc(r.operator().Spec.Template.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool { return p.Name == "alerts" }) {
					t.Error("the policies name ports the pods do not")
				}
			},
		},
		"notifications": {
			values: `
notifications:
  enabled: true
  urlsSecret: {name: chat-urls, key: slack}
  reasons: [RolloutStarted, RolloutFinished]
  interval: 5m
  title: prod-eu
alertWebhook: {tls: {mode: secret}}
`,
			check: func(t *testing.T, r rendered) {
				spec := r.operator().Spec.Template.Spec
				ctr := spec.Containers[0]
				for _, arg := range []string{"--notify-urls-file=/etc/kmaint/notify/urls", "--notify-reasons=RolloutStarted,RolloutFinished",
					"--notify-interval=5m", "--notify-title=prod-eu"} {
					if !slices.Contains(ctr.Args, arg) {
						t.Errorf("args %q lack %s", ctr.Args, arg)
					}
				}
				if !slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
					return m.Name == "notify-urls" && m.MountPath == "/etc/kmaint/notify" && m.ReadOnly
				}) || !slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "alert-webhook-tls" }) {
					t.Errorf("mounts %v: want the URLs beside the webhook's certificate", ctr.VolumeMounts)
				}
				i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "notify-urls" })
				if i < 0 {
					t.Fatalf("volumes %v lack notify-urls", spec.Volumes)
				}
				want := &corev1.SecretVolumeSource{SecretName: "chat-urls", Items: []corev1.KeyToPath{{Key: "slack", Path: "urls"}}, Optional: ptr.To(true)}
				if diff := cmp.Diff(want, spec.Volumes[i].Secret); diff != "" {
					t.Errorf("the URLs' volume (-want +got):\n%s", diff)
				}
				for _, arg := range ctr.Args {
					if strings.Contains(arg, "slack://") {
						t.Errorf("a URL in the args: %s", arg)
					}
				}
			},
		},
		"webhook off": {
			values: "alertWebhook: {enabled: false, tokenSecret: {create: true}}",
			check: func(t *testing.T, r rendered) {
				ctr := r.operator().Spec.Template.Spec.Containers[0]
				for _, arg := range ctr.Args {
					if strings.HasPrefix(arg, "--alert-webhook") {
						t.Errorf("webhook off, yet arg %s", arg)
					}
				}
				if slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == "alerts" }) {
					t.Error("webhook off, yet the container has port alerts")
				}
				svc := &corev1.Service{}
				r.into("Service/kmaint-system/kmaint-operator", svc)
				if slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "alerts" }) {
					t.Error("webhook off, yet the Service has port alerts")
				}
				if _, ok := r.objs["Secret/kmaint-system/kmaint-alert-webhook"]; ok {
					t.Error("webhook off, yet the token Secret")
				}
				role := &rbacv1.Role{}
				r.into("Role/kmaint-system/kmaint-operator", role)
				for _, rule := range role.Rules {
					if slices.Contains(rule.Resources, "secrets") {
						t.Errorf("webhook off, yet the operator may read Secrets: %v", rule)
					}
				}
			},
		},
		"webhook secret from value": {
			values: "alertWebhook: {port: 9444, tokenSecret: {name: am-token, key: bearer, create: true, token: s3cret}}",
			check: func(t *testing.T, r rendered) {
				ctr := r.operator().Spec.Template.Spec.Containers[0]
				for _, arg := range []string{"--alert-webhook-bind-address=:9444", "--alert-webhook-token-secret=kmaint-system/am-token", "--alert-webhook-token-key=bearer"} {
					if !slices.Contains(ctr.Args, arg) {
						t.Errorf("args %q lack %s", ctr.Args, arg)
					}
				}
				s := &corev1.Secret{}
				r.into("Secret/kmaint-system/am-token", s)
				if diff := cmp.Diff(map[string][]byte{"bearer": []byte("s3cret")}, s.Data); diff != "" {
					t.Errorf("Secret data (-want +got):\n%s", diff)
				}
			},
		},
		"webhook secret generated": {
			values: "alertWebhook: {tokenSecret: {create: true}}",
			check: func(t *testing.T, r rendered) {
				s := &corev1.Secret{}
				r.into("Secret/kmaint-system/kmaint-alert-webhook", s)
				if got := len(s.Data["token"]); got < 32 {
					t.Errorf("generated token has %d bytes, want at least 32", got)
				}
			},
		},
		"daemon scheduling": {
			values: `
daemon:
  nodeSelector: {kubernetes.io/os: linux}
  tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]
  priorityClassName: ""
  extraArgs: [--zap-log-level=debug]
  maxUnavailable: 1
`,
			check: func(t *testing.T, r rendered) {
				ds := r.daemon()
				spec := ds.Spec.Template.Spec
				if diff := cmp.Diff(map[string]string{"kubernetes.io/os": "linux"}, spec.NodeSelector); diff != "" {
					t.Errorf("nodeSelector (-want +got):\n%s", diff)
				}
				want := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
				if diff := cmp.Diff(want, spec.Tolerations); diff != "" {
					t.Errorf("tolerations (-want +got):\n%s", diff)
				}
				if spec.PriorityClassName != "" {
					t.Errorf("priorityClassName %q, want none", spec.PriorityClassName)
				}
				if !slices.Contains(spec.Containers[0].Args, "--zap-log-level=debug") {
					t.Errorf("args %q lack --zap-log-level=debug", spec.Containers[0].Args)
				}
				if got := ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.String(); got != "1" {
					t.Errorf("maxUnavailable %s, want 1", got)
				}
			},
		},
		// Nodes that are containers: the node's boot ID from a host file,
		// mounted read-only where --boot-id-file says.
		"boot ID file": {
			values: "daemon: {bootIDFile: /run/kmaint/boot_id}",
			check: func(t *testing.T, r rendered) {
				spec := r.daemon().Spec.Template.Spec
				ctr := spec.Containers[0]
				if !slices.Contains(ctr.Args, "--boot-id-file=/run/kmaint/boot_id") {
					t.Errorf("args %q lack --boot-id-file=/run/kmaint/boot_id", ctr.Args)
				}
				i := slices.IndexFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/run/kmaint/boot_id" })
				if i < 0 || !ctr.VolumeMounts[i].ReadOnly {
					t.Fatalf("no read-only mount at /run/kmaint/boot_id: %v", ctr.VolumeMounts)
				}
				j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == ctr.VolumeMounts[i].Name })
				want := &corev1.HostPathVolumeSource{Path: "/run/kmaint/boot_id", Type: ptr.To(corev1.HostPathFile)}
				if j < 0 || !cmp.Equal(spec.Volumes[j].HostPath, want) {
					t.Errorf("volume %s is not the host file /run/kmaint/boot_id: %v", ctr.VolumeMounts[i].Name, spec.Volumes)
				}
			},
		},
		// Root on the host gets the command: an init container copies it
		// into the host directory, which only it mounts, writable.
		"host command": {
			values: "daemon: {hostCommandDir: /opt/kmaint/bin}",
			check: func(t *testing.T, r rendered) {
				spec := r.daemon().Spec.Template.Spec
				if len(spec.InitContainers) != 1 {
					t.Fatalf("init containers %v, want the host command's", spec.InitContainers)
				}
				ini := spec.InitContainers[0]
				if want := []string{"/kmaint-daemon", "install-host-command", "/opt/kmaint/bin"}; !slices.Equal(ini.Command, want) {
					t.Errorf("init command %q, want %q", ini.Command, want)
				}
				if ini.Image != spec.Containers[0].Image {
					t.Errorf("init image %q, the daemon's %q: the command on the host would not be the daemon's", ini.Image, spec.Containers[0].Image)
				}
				sc := ini.SecurityContext
				if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
					sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
					t.Errorf("init security context %+v: want unprivileged, no escalation, every capability dropped", sc)
				}
				if len(ini.VolumeMounts) != 3 || ini.VolumeMounts[0].MountPath != "/opt/kmaint/bin" || ini.VolumeMounts[0].ReadOnly {
					t.Fatalf("init mounts %v, want /opt/kmaint/bin, writable, and its parents", ini.VolumeMounts)
				}
				// Its parents, read-only at their own paths, for the install
				// to check the host's.
				for i, parent := range []string{"/opt/kmaint", "/opt"} {
					m := ini.VolumeMounts[i+1]
					j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
					if m.MountPath != parent || !m.ReadOnly || j < 0 || spec.Volumes[j].HostPath == nil || spec.Volumes[j].HostPath.Path != parent {
						t.Errorf("init mount %d: %+v (volume %d), want the host's %s read-only", i+1, m, j, parent)
					}
				}
				j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == ini.VolumeMounts[0].Name })
				want := &corev1.HostPathVolumeSource{Path: "/opt/kmaint/bin", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}
				if j < 0 || !cmp.Equal(spec.Volumes[j].HostPath, want) {
					t.Errorf("volume %s is not the host directory /opt/kmaint/bin: %v", ini.VolumeMounts[0].Name, spec.Volumes)
				}
				for _, m := range spec.Containers[0].VolumeMounts {
					if m.Name == ini.VolumeMounts[0].Name {
						t.Errorf("the daemon mounts the host command's directory too, at %s", m.MountPath)
					}
				}
				// The service account token is the daemon container's
				// alone.
				if ptr.Deref(spec.AutomountServiceAccountToken, true) {
					t.Error("the daemon pod mounts its token into every container")
				}
				for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
					has := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
						return m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount"
					})
					if has != (c.Name == "daemon") {
						t.Errorf("container %s mounts the service account token: %v; want the daemon's only", c.Name, has)
					}
				}
			},
		},
		"pools": {
			values: `
pools:
  - name: workers
    spec:
      nodeSelector: {matchLabels: {node-role.kubernetes.io/worker: ""}}
      maxUnavailable: 10%
  - name: default
`,
			check: func(t *testing.T, r rendered) {
				for key, spec := range map[string]map[string]any{
					"MaintenancePool/workers": {
						"nodeSelector":   map[string]any{"matchLabels": map[string]any{"node-role.kubernetes.io/worker": ""}},
						"maxUnavailable": "10%",
					},
					"MaintenancePool/default": {},
				} {
					u, ok := r.objs[key]
					if !ok {
						t.Errorf("%s not rendered", key)
						continue
					}
					got, _, _ := unstructured.NestedMap(u.Object, "spec")
					if diff := cmp.Diff(spec, got); diff != "" {
						t.Errorf("%s spec (-want +got):\n%s", key, diff)
					}
				}
			},
		},
		// Everything that names the namespace follows the release's: the
		// admission policy's service account most of all, else the daemon
		// would be confined by a policy that never matches it.
		"other namespace": {
			ns: "maintenance",
			check: func(t *testing.T, r rendered) {
				// The daemon's events go where the events about Nodes go,
				// whatever the release's namespace, and the operator's
				// notifier reads them there.
				// The hooks' Jobs go where values.hooks says.
				inDefault := map[string]bool{"Role/default/kmaint-daemon": true, "RoleBinding/default/kmaint-daemon": true,
					"Role/default/kmaint-operator": true, "RoleBinding/default/kmaint-operator": true,
					"Role/kmaint-hooks/kmaint-operator": true, "RoleBinding/kmaint-hooks/kmaint-operator": true,
					"ServiceAccount/kmaint-hooks/kmaint-hook": true}
				for _, u := range r.objs {
					if ns := u.GetNamespace(); ns != "" && ns != "maintenance" && !inDefault[manifests.ID(u)] {
						t.Errorf("%s is not in the release namespace", manifests.ID(u))
					}
				}
				// The operator's policies let its account in the release's
				// namespace through; the daemon's confine kmaint-daemon in
				// every namespace, this one among them.
				for policy, want := range map[string]string{
					"kmaint-daemon-own-node": "endsWith(':kmaint-daemon')", "kmaint-daemon-events": "endsWith(':kmaint-daemon')",
					"kmaint-request-sources":      "'system:serviceaccount:maintenance:kmaint-operator'",
					"kmaint-operator-annotations": "'system:serviceaccount:maintenance:kmaint-operator'",
					"kmaint-events":               "'system:serviceaccount:maintenance:kmaint-operator'",
				} {
					vap := r.objs["ValidatingAdmissionPolicy/"+policy]
					if vap == nil {
						t.Errorf("no admission policy %s", policy)
						continue
					}
					conds, _, _ := unstructured.NestedSlice(vap.Object, "spec", "matchConditions")
					if len(conds) == 0 || !strings.Contains(conds[0].(map[string]any)["expression"].(string), want) {
						t.Errorf("the admission policy %s does not match its service account (%s): %v", policy, want, conds)
					}
				}
				if !strings.Contains(policyVariable(t, r, "kmaint-hooks-namespace", "operator"), "'system:serviceaccount:maintenance:kmaint-operator'") {
					t.Error("the hooks namespace's policy does not let the operator's account in the release's namespace make Jobs")
				}
				for _, key := range []string{"ClusterRoleBinding/kmaint-daemon", "RoleBinding/default/kmaint-daemon", "ClusterRoleBinding/kmaint-operator", "RoleBinding/maintenance/kmaint-operator", "RoleBinding/default/kmaint-operator"} {
					subjects, _, _ := unstructured.NestedSlice(r.objs[key].Object, "subjects")
					if len(subjects) != 1 || subjects[0].(map[string]any)["namespace"] != "maintenance" {
						t.Errorf("%s: subjects %v", key, subjects)
					}
				}
				if !slices.Contains(r.operator().Spec.Template.Spec.Containers[0].Args, "--alert-webhook-token-secret=maintenance/kmaint-alert-webhook") {
					t.Error("the webhook's token Secret is not in the release namespace")
				}
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			ns := c.ns
			if ns == "" {
				ns = namespace
			}
			c.check(t, render(t, ns, c.values))
		})
	}
}

// policyVariable returns the expression of a variable of a rendered
// admission policy.
func policyVariable(t *testing.T, r rendered, policy, variable string) string {
	t.Helper()
	vap := r.objs["ValidatingAdmissionPolicy/"+policy]
	if vap == nil {
		t.Fatalf("no admission policy %s", policy)
	}
	vars, _, _ := unstructured.NestedSlice(vap.Object, "spec", "variables")
	for _, v := range vars {
		if m := v.(map[string]any); m["name"] == variable {
			return m["expression"].(string)
		}
	}
	t.Fatalf("admission policy %s has no variable %s", policy, variable)
	return ""
}
