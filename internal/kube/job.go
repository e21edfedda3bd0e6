package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"slipway.dev/slipway/internal/quote"
	"slipway.dev/slipway/internal/spec"
)

// RunJob creates job, waits up to limit for it to complete or fail, and deletes it with its
// pods. A Job of that name left by an earlier run (killed before it deleted it) is deleted
// first: a Job's template cannot change, and its outcome is that run's. A Job of that name
// that slipway did not make for job's group (its labels) is someone else's: RunJob refuses,
// naming it, and deletes nothing (issue 35). Every delete carries the UID of the Job judged.
func (c *Client) RunJob(ctx context.Context, job *batchv1.Job, limit time.Duration) error {
	jobs := c.Clientset.BatchV1().Jobs(job.Namespace)
	name := qualified(job.Namespace, job.Name)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	old, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("job %s: %w", name, err)
	case !sameOwner(old.Labels, job.Labels):
		return fmt.Errorf("job %s exists and slipway did not make it for group %s: slipway will not delete it; delete or rename it, and apply again", name, job.Labels[spec.LabelGroup])
	default:
		if err := c.deleteJob(ctx, job.Namespace, job.Name, old.UID); err != nil {
			return err
		}
	}
	made, err := jobs.Create(ctx, job, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("job %s: create: %w", name, err)
	}
	var failed string
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		j, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("job %s: %w", name, err)
		}
		for _, cond := range j.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				continue
			}
			switch cond.Type {
			case batchv1.JobComplete:
				return true, nil
			case batchv1.JobFailed:
				failed = cond.Reason + ": " + cond.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err == nil && failed != "" {
		err = fmt.Errorf("job %s failed: %s%s", name, failed, c.jobLog(ctx, job))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("job %s did not finish within %s%s", name, limit, c.jobLog(ctx, job))
	}
	// Deleted whatever the outcome: it holds a pod on the volume's host, and its log is in err.
	if derr := c.deleteJob(context.WithoutCancel(ctx), job.Namespace, job.Name, made.UID); derr != nil && err == nil {
		err = derr
	}
	return err
}

// sameOwner reports whether a live Job's labels say slipway made it for the group want names.
func sameOwner(live, want map[string]string) bool {
	return JobOwnedBy(live, want[spec.LabelGroup])
}

// JobOwnedBy reports whether a Job's labels say slipway made it for group: the ownership
// check a plan (a conflict) and RunJob (a refusal) share.
func JobOwnedBy(labels map[string]string, group string) bool {
	return labels[spec.LabelManagedBy] == spec.ManagedBy && labels[spec.LabelGroup] == group
}

// Job reads Job ns/name; nil when there is none.
func (c *Client) Job(ctx context.Context, ns, name string) (*batchv1.Job, error) {
	j, err := c.Clientset.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", qualified(ns, name), err)
	}
	return j, nil
}

// deleteJob deletes Job name of UID uid (the one judged: a Job re-made since by someone else
// stays) with its pods (background) and waits until it is gone.
func (c *Client) deleteJob(ctx context.Context, ns, name string, uid types.UID) error {
	jobs := c.Clientset.BatchV1().Jobs(ns)
	bg := metav1.DeletePropagationBackground
	err := jobs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("job %s: delete: %w", qualified(ns, name), err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		j, err := jobs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && j.UID != uid {
			return true, nil
		}
		return false, err
	})
}

// jobLog is the last log lines of the Job's pod, as "; last log lines: …", "" when none.
func (c *Client) jobLog(ctx context.Context, job *batchv1.Job) string {
	pods, err := c.Clientset.CoreV1().Pods(job.Namespace).List(context.WithoutCancel(ctx), metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
	if err != nil || len(pods.Items) == 0 || len(job.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	logs := c.PodLogTail(context.WithoutCancel(ctx), job.Namespace, pods.Items[0].Name, job.Spec.Template.Spec.Containers[0].Name, 10)
	if logs == "" {
		return ""
	}
	return "; last log lines: " + quote.Lines(logs, " | ")
}
