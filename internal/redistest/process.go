package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// A process is a running redis-server of a test's own.
type process struct {
	cmd *exec.Cmd
	// exited is closed when cmd has exited; err is then its error.
	exited chan struct{}
	err    error
}

// startProcess runs redis-server with args, logging to logPath, and waits
// until it answers PING at network and addr. A loaded machine may take
// long to start a process: the deadline is generous, and a server that
// exits is reported at once, with its log.
func startProcess(args []string, network, addr, logPath string) (*process, error) {
	p := &process{cmd: exec.Command("redis-server", append(args, "--logfile", logPath)...), exited: make(chan struct{})}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	c := redis.NewClient(&redis.Options{Network: network, Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return p, nil
		}
		select {
		case <-p.exited:
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("redis-server on %s exited: %v\n%s", addr, p.err, log)
		default:
		}
		if time.Now().After(deadline) {
			p.kill()
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("redis-server on %s does not answer: %w\n%s", addr, err, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill stops the process with SIGKILL (a frozen one too) and waits for it.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	<-p.exited
}
