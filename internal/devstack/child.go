package devstack

import (
	"bytes"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Output serialises the prefixed lines of several children onto one writer.
type Output struct {
	mu sync.Mutex
	w  io.Writer
}

// NewOutput wraps w.
func NewOutput(w io.Writer) *Output { return &Output{w: w} }

// Println writes one line (for progress messages interleaved with the children's lines).
func (o *Output) Println(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = io.WriteString(o.w, line+"\n")
}

// Prefixed returns a writer that writes every complete line as "prefix | line".
func (o *Output) Prefixed(prefix string) *LineWriter {
	return &LineWriter{out: o, prefix: prefix + " | "}
}

// LineWriter buffers partial lines; Flush writes what is left.
type LineWriter struct {
	out    *Output
	prefix string
	mu     sync.Mutex
	buf    []byte
}

func (l *LineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.out.Println(l.prefix + string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

// Flush writes a trailing partial line.
func (l *LineWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.out.Println(l.prefix + string(l.buf))
		l.buf = nil
	}
}

// Child is one running child process.
type Child struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartChild runs path with args and env; its stdout goes to stdout and its stderr to stderr,
// each line prefixed with name. The child has its own process group (a terminal's Ctrl-C reaches
// the parent only, which then stops the children in order) and receives SIGTERM if the parent dies.
func StartChild(name, path string, args, env []string, stdout, stderr *Output) (*Child, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	outW, errW := stdout.Prefixed(name), stderr.Prefixed(name)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = procAttr(nil, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{Name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		outW.Flush()
		errW.Flush()
		close(c.done)
	}()
	return c, nil
}

// Done is closed when the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// ExitCode is the child's exit status (-1 when killed by a signal); valid after Done.
func (c *Child) ExitCode() int { return c.cmd.ProcessState.ExitCode() }

// Stop sends SIGTERM, waits up to grace, then kills. It reports whether the child had to be killed.
func (c *Child) Stop(grace time.Duration) (killed bool) {
	select {
	case <-c.done:
		return false
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return false
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
		return true
	}
}
