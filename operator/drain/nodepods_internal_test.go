package drain

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A drain keeps of a pod what kubectl's drain filters, the pod selector
// and the eviction read, and none of its containers, status or managed
// fields.
func TestADrainKeepsOfAPodOnlyWhatItReads(t *testing.T) {
	g := NewWithT(t)
	now := metav1.Now()
	controller := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-1", Namespace: "shop", UID: "u1", ResourceVersion: "7",
			Labels:            map[string]string{"app": "web"},
			Annotations:       map[string]string{corev1.MirrorPodAnnotationKey: "abc", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			OwnerReferences:   []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", Controller: &controller}},
			DeletionTimestamp: &now,
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.PodSpec{
			NodeName:   "n1",
			Containers: []corev1.Container{{Name: "web", Image: "web:1"}},
			Volumes: []corev1.Volume{
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "web"}}},
	}
	slim := slimPod(pod)
	g.Expect(slim.Name).To(Equal("web-1"))
	g.Expect(slim.Namespace).To(Equal("shop"))
	g.Expect(slim.Labels).To(Equal(map[string]string{"app": "web"}))
	g.Expect(slim.Annotations).To(Equal(map[string]string{corev1.MirrorPodAnnotationKey: "abc"}))
	g.Expect(slim.OwnerReferences).To(Equal(pod.OwnerReferences))
	g.Expect(slim.DeletionTimestamp).To(Equal(&now))
	g.Expect(slim.Spec.NodeName).To(Equal("n1"))
	g.Expect(slim.Spec.Volumes).To(HaveLen(1))
	g.Expect(slim.Spec.Volumes[0].EmptyDir).NotTo(BeNil())
	g.Expect(slim.Status.Phase).To(Equal(corev1.PodRunning))
	g.Expect(slim.ManagedFields).To(BeNil())
	g.Expect(slim.Spec.Containers).To(BeNil())
	g.Expect(slim.Status.ContainerStatuses).To(BeNil())
}
