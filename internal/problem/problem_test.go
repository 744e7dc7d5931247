package problem

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorText(t *testing.T) {
	t.Parallel()
	cause := errors.New("connection refused")
	for _, c := range []struct {
		err  *Error
		want string
	}{
		{&Error{Code: "X"}, "X"},
		{&Error{Code: "X", Message: "The thing failed.", Details: []Detail{{Path: "/a", Code: DetailRequired}}}, "X: The thing failed."},
		{&Error{Code: "X", Message: "The thing failed.", Cause: cause}, "X: The thing failed.: connection refused"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	wrapped := fmt.Errorf("loading: %w", &Error{Code: "X", Cause: cause})
	var pe *Error
	if !errors.As(wrapped, &pe) || pe.ErrorCode() != "X" || !errors.Is(wrapped, cause) {
		t.Fatalf("unwrapping %v", wrapped)
	}
}

func TestNewKeepsAtMostMaxDetails(t *testing.T) {
	t.Parallel()
	details := make([]Detail, MaxDetails+5)
	if got := len(New("X", "m", details...).Details); got != MaxDetails {
		t.Fatalf("%d details", got)
	}
}

func TestPointers(t *testing.T) {
	t.Parallel()
	if JSONPointer("a/b", "~c") != "/a~1b/~0c" || JSONPointer() != "" || EscapeToken("x/~") != "x~1~0" {
		t.Fatal("pointer escaping")
	}
	in := []Detail{{Path: "", Code: DetailInvalidType}, {Path: "/x", Code: DetailRequired, Message: "m"}}
	got := Under("/drivers/compute/configuration", in)
	if got[0].Path != "/drivers/compute/configuration" || got[1].Path != "/drivers/compute/configuration/x" || got[1].Message != "m" || in[1].Path != "/x" {
		t.Fatalf("Under = %v (input %v)", got, in)
	}
	if fmt.Sprint(got) != "[{/drivers/compute/configuration INVALID_TYPE} {/drivers/compute/configuration/x REQUIRED m}]" {
		t.Fatalf("String = %v", got)
	}
}
