package main

import (
	"fmt"
	"strings"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/kubepty"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeBackend is the backend of --kube NAMESPACE/POD[/CONTAINER]: sessions
// run in that pod, through the API server of the kubeconfig kubectl would
// use ($KUBECONFIG, else ~/.kube/config, and its current context).
func kubeBackend(spec string) (agentpty.Backend, error) {
	parts := strings.Split(spec, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return nil, fmt.Errorf("--kube %q: want NAMESPACE/POD or NAMESPACE/POD/CONTAINER", spec)
	}
	container := ""
	if len(parts) == 3 {
		container = parts[2]
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kube %q: %w", spec, err)
	}
	b, err := kubepty.New(cfg, parts[0], parts[1], container)
	if err != nil {
		return nil, fmt.Errorf("--kube %q: %w", spec, err)
	}
	return b, nil
}
