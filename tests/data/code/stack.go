package stack

// Stack is a last-in first-out list.
type Stack struct {
	items []int
}

// Push puts v on top.
func (s *Stack) Push(v int) {
	s.items = append(s.items, v)
}

func New() *Stack {
	return &Stack{}
}
