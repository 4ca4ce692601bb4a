package remote

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func taskDirs(pid int) []string {
	m, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*")
	return m
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// alive reports a live process (a zombie has ended).
func alive(pid int) bool {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := strings.LastIndexByte(b, ')')
	return err == nil && i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}
