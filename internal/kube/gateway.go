package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"slipway.dev/slipway/internal/plan"
)

type gatewayAPI = gwclient.Interface

func (c *Client) gatewayAPI() (gatewayAPI, error) {
	c.gatewayOnce.Do(func() {
		c.gateway, c.gatewayErr = gwclient.NewForConfig(c.Config)
		if c.gatewayErr != nil {
			c.gatewayErr = fmt.Errorf("gateway api client: %w", c.gatewayErr)
		}
	})
	return c.gateway, c.gatewayErr
}

// Gateway returns the Gateway ns/name and its GatewayClass (nil when the class does not
// exist); a nil Gateway when it does not exist, or the cluster does not serve the Gateway API.
func (c *Client) Gateway(ctx context.Context, ns, name string) (*gwv1.Gateway, *gwv1.GatewayClass, error) {
	gc, err := c.gatewayAPI()
	if err != nil {
		return nil, nil, err
	}
	gw, err := gc.GatewayV1().Gateways(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("gateway %s/%s: %w", ns, name, err)
	}
	class, err := gc.GatewayV1().GatewayClasses().Get(ctx, string(gw.Spec.GatewayClassName), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return gw, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("gatewayclass %s: %w", gw.Spec.GatewayClassName, err)
	}
	return gw, class, nil
}

// WaitRoute follows the route k (a TLSRoute or HTTPRoute) until done says it is done or
// fails, or ctx ends (the caller's limit). done sees the route's generation and status; a
// route that does not exist yet is waited for.
func (c *Client) WaitRoute(ctx context.Context, k plan.Key, done func(generation int64, st gwv1.RouteStatus) (bool, error)) error {
	gc, err := c.gatewayAPI()
	if err != nil {
		return err
	}
	switch k.Kind {
	case "TLSRoute":
		return waitFor(ctx, k, gc.GatewayV1().TLSRoutes(k.Namespace), func(r *gwv1.TLSRoute) (bool, error) {
			return done(r.Generation, r.Status.RouteStatus)
		})
	case "HTTPRoute":
		return waitFor(ctx, k, gc.GatewayV1().HTTPRoutes(k.Namespace), func(r *gwv1.HTTPRoute) (bool, error) {
			return done(r.Generation, r.Status.RouteStatus)
		})
	}
	return fmt.Errorf("%s: not a route kind", k)
}

// WaitService follows the Service ns/name until done says it is done, or ctx ends.
func (c *Client) WaitService(ctx context.Context, ns, name string, done func(*corev1.Service) bool) error {
	k := plan.Key{Kind: "Service", Namespace: ns, Name: name}
	return waitFor(ctx, k, c.Clientset.CoreV1().Services(ns), func(s *corev1.Service) (bool, error) {
		return done(s), nil
	})
}

// getWatcher is the part of a typed client waitFor uses.
type getWatcher[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// waitFor reads the object k and then watches it, calling check on each version, until check
// says done or fails, or ctx ends. A closed watch is opened again from a fresh read.
func waitFor[T metav1.Object](ctx context.Context, k plan.Key, api getWatcher[T], check func(T) (bool, error)) error {
	for {
		rv := ""
		obj, err := api.Get(ctx, k.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: %w", k, err)
		default:
			if ok, err := check(obj); ok || err != nil {
				return err
			}
			rv = obj.GetResourceVersion()
		}
		w, err := api.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + k.Name, ResourceVersion: rv})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: watch: %w", k, err)
		}
		done, err := watchUntil(ctx, w, check)
		w.Stop()
		if done || err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// watchUntil reads w until check says done or fails (true), ctx ends (its error) or the watch
// closes (false, nil).
func watchUntil[T metav1.Object](ctx context.Context, w watch.Interface, check func(T) (bool, error)) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			obj, isT := ev.Object.(T)
			if !isT || ev.Type == watch.Deleted {
				continue
			}
			if ok, err := check(obj); ok || err != nil {
				return true, err
			}
		}
	}
}
