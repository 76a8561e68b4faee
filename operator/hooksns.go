package operator

import (
	"context"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/operator/hooks"
)

// reservedNamespace reports whether ns is one Kubernetes keeps for itself
// (the prefix kube- is its) or for everyone (default): no hooks namespace,
// whatever it holds at the moment.
func reservedNamespace(ns string) bool {
	return ns == "default" || strings.HasPrefix(ns, "kube-")
}

// checkHooksNamespace refuses a hooks namespace that holds other workloads.
// Its Pod Security level is privileged, for the pools' hooks, and only the
// operator's Jobs and their pods belong there (config/admission keeps it
// so from then on): whatever else runs there shares that level, and the
// namespace's service accounts and Secrets with the hooks' pods.
//
// A workload is what runs there, or makes what runs: a Pod that is not a
// pod of one of kmaint's hook Jobs, and a Job that is not kmaint's. A
// Deployment, StatefulSet, DaemonSet or CronJob shows as its pods or Jobs
// (one scaled to zero, or suspended, makes none until admission refuses
// them), and the operator needs no right to read those kinds. The
// operator's own namespace is refused too, whatever it holds at the
// moment: its token and Secrets live there.
func checkHooksNamespace(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, ns string) error {
	if ns == "" {
		return nil
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	self, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("--hooks-namespace=%s: ask the API server who the operator is, to tell whether the namespace is its own: %w", ns, err)
	}
	if own, _, ok := serviceAccountOf(self.Status.UserInfo.Username); ok && own == ns {
		return fmt.Errorf("--hooks-namespace=%s is the operator's own namespace: hook pods may be privileged and would share its service accounts and Secrets; name a namespace of kmaint's hooks alone (the manifests' kmaint-hooks)", ns)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("--hooks-namespace=%s: list its Jobs, to find any that is not kmaint's: %w", ns, err)
	}
	for i := range jobs.Items {
		if j := &jobs.Items[i]; !hookLabelled(j.Labels) {
			return foreignWorkload(ns, "Job", j.Name, "not one of kmaint's hook Jobs")
		}
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("--hooks-namespace=%s: list its pods, to find any that is not of kmaint's hook Jobs: %w", ns, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		// Every Job there is kmaint's (above); a pod whose Job was deleted
		// a moment ago, its pods not yet, is still one of a hook Job's, by
		// its labels and its owner's kind.
		owner := metav1.GetControllerOfNoCopy(p)
		ofHookJob := owner != nil && owner.Kind == "Job" && strings.HasPrefix(owner.APIVersion, batchv1.GroupName+"/") && hookLabelled(p.Labels)
		if !ofHookJob {
			return foreignWorkload(ns, "pod", p.Name, "not a pod of kmaint's hook Jobs")
		}
	}
	return nil
}

// hookLabelled reports whether labels are those kmaint puts on a hook's
// Job and on its pods (hooks.NewJob).
func hookLabelled(labels map[string]string) bool {
	return labels[hooks.ManagedByLabel] == "kmaint" && labels[hooks.HookLabel] != "" && labels[hooks.TokenLabel] != ""
}

func foreignWorkload(ns, kind, name, what string) error {
	return fmt.Errorf("--hooks-namespace=%s holds other workloads: %s %s is %s; hook pods may be privileged, and whatever else runs there "+
		"shares their Pod Security level, service accounts and Secrets; move it out, or name a namespace of kmaint's hooks alone (the manifests' kmaint-hooks)",
		ns, kind, name, what)
}

// serviceAccountOf splits a service account's user name,
// system:serviceaccount:<namespace>:<name>.
func serviceAccountOf(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != ""
}
