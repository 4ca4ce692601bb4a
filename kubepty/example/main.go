// Command example runs a shell command in a pod through agentpty, as a
// model would through the tools: it starts the command, types a line,
// and prints what the terminal showed and how the command ended.
//
//	go run ./example --kubeconfig ~/.kube/config --namespace default --pod my-pod \
//	    --command 'python3 -q' --input '2**64'
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/kubepty"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	home, _ := os.UserHomeDir()
	kubeconfig := flag.String("kubeconfig", filepath.Join(home, ".kube", "config"), "the kubeconfig file")
	namespace := flag.String("namespace", "default", "the pod's namespace")
	pod := flag.String("pod", "", "the pod (required)")
	container := flag.String("container", "", "the container (empty: the pod's default)")
	command := flag.String("command", "python3 -q", "the command, run by sh -c in the container")
	input := flag.String("input", "2**64", "a line to type once the command waits for input")
	flag.Parse()
	if *pod == "" {
		flag.Usage()
		os.Exit(2)
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	backend, err := kubepty.New(config, *namespace, *pod, *container)
	if err != nil {
		log.Fatal(err)
	}
	m := agentpty.NewManager(agentpty.Options{Backend: backend, Shell: []string{"sh", "-c"}})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := m.Start(ctx, agentpty.StartRequest{Command: *command, WaitUntil: "input"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s\n[state %s, foreground %q]\n", backend, res.Output, res.State, res.Foreground)
	if *input != "" && !res.Exited {
		w, err := m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: *input, Submit: true, WaitUntil: "input"})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s\n[state %s]\n", w.Output, w.State)
	}
	k, err := m.Kill(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	if k.ExitCode != nil {
		fmt.Printf("[exit code %d]\n", *k.ExitCode)
	}
}
