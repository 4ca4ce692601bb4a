//go:build linux

package contain

import "testing"

// The cgroup is found from mountinfo and /proc/self/cgroup, wherever the
// hierarchy is mounted and whatever part of it the mount shows.
func TestCgroupDir(t *testing.T) {
	const mounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 23 0:40 /user.slice /mnt/with\040space rw - cgroup2 cgroup2 rw
`
	for _, c := range []struct {
		self, controller, want string
		ok                     bool
	}{
		{"8:pids:/\n0::/\n", "", "/sys/fs/cgroup/unified", true},
		{"8:pids:/a\n0::/b/c\n", "", "/sys/fs/cgroup/unified/b/c", true},
		{"8:pids:/a\n0::/b/c\n", "pids", "/sys/fs/cgroup/pids/a", true},
		{"8:pids:/a\n", "", "", false},
		{"4:memory:/x\n0::/\n", "pids", "", false},
	} {
		got, ok := cgroupDir(mounts, c.self, c.controller)
		if got != c.want || ok != c.ok {
			t.Errorf("cgroupDir(%q, %q) = %q, %v; want %q, %v", c.self, c.controller, got, ok, c.want, c.ok)
		}
	}
	// Only a mount that shows this process's part of the hierarchy counts;
	// octal escapes in mount points are undone.
	const inner = `50 23 0:40 /user.slice /mnt/with\040space rw - cgroup2 cgroup2 rw
`
	if got, ok := cgroupDir(inner, "0::/user.slice/app\n", ""); !ok || got != "/mnt/with space/app" {
		t.Errorf("inner mount: %q, %v", got, ok)
	}
	if _, ok := cgroupDir(inner, "0::/system.slice\n", ""); ok {
		t.Errorf("a mount of another part of the hierarchy was taken")
	}
}
