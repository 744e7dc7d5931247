package cli

import (
	"fmt"
	"os"
	"os/exec"
)

// The banner occ dev prints once the stack answers: where it is, what its Compute Driver can and
// cannot do, and commands to try with the very binary that runs.

// devContext is the outcome of writing the client context dev.
type devContext struct {
	path    string
	current bool
	err     error
}

func (d *devRun) banner(baseURL, keyFile, self string) {
	bin := displayBinary(self)
	d.out.Println("")
	d.out.Println("OCC is running.")
	d.out.Println("  URL:              " + baseURL)
	d.out.Println("  Service key file: " + keyFile)
	ctx := d.context
	switch {
	case ctx.err != nil:
		d.out.Println("  Context:          not written (" + ctx.err.Error() + ")")
	case ctx.current:
		d.out.Println("  Context:          " + devContextName + " in " + ctx.path + " (current: client commands use it)")
	default:
		d.out.Println("  Context:          " + devContextName + " in " + ctx.path + " (another context is current: " + bin + " config use-context dev)")
	}
	if choice, ok := computeChoice[d.compute]; ok {
		d.out.Println(fmt.Sprintf("  Compute:          %s: %s; it cannot %s.", d.compute, choice.can, choice.cannot))
		d.out.Println("                    Choose another with " + otherComputes(d.compute) + ".")
	} else {
		d.out.Println("  Compute:          as OCC_CONFIG_PATH selects")
	}
	d.out.Println("Try, in another terminal:")
	prefix := bin + " "
	switch {
	case ctx.err != nil:
		d.out.Println(fmt.Sprintf("  export OCC_URL=%s OCC_SERVICE_KEY_FILE=%s", baseURL, keyFile))
	case !ctx.current:
		d.out.Println("  " + bin + " config use-context dev")
	}
	d.out.Println("  " + prefix + "installation get")
	d.out.Println("  " + prefix + "namespace list")
	d.out.Println("  " + prefix + "namespace create team-a --wait")
	d.out.Println("Press Ctrl-C to stop.")
	d.out.Println("")
}

// displayBinary is how to type the running binary: occ when that name on PATH is this very file,
// else its absolute path.
func displayBinary(self string) string {
	if found, err := exec.LookPath("occ"); err == nil {
		a, errA := os.Stat(found)
		b, errB := os.Stat(self)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return "occ"
		}
	}
	return self
}
