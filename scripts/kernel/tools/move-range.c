/*
 * move-range: issues F2FS_IOC_MOVE_RANGE and prints "OK" or "ERR <errno>", so that
 * the same cases can run on Linux F2FS (the kernel check's busybox guest, which has
 * no f2fs_io move_range) and on a uf2fs mount (scripts/kernel/workloads/move-range.sh).
 *
 * usage: move-range SRC SRC_MODE DST DST_MODE POS_IN POS_OUT LEN
 *   SRC_MODE, DST_MODE: rw (O_RDWR), ro (O_RDONLY), wo (O_WRONLY); DST_MODE none
 *   passes descriptor 1000, not open. DST is created when missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

struct f2fs_move_range {
	uint32_t dst_fd;
	uint64_t pos_in;
	uint64_t pos_out;
	uint64_t len;
};

#define F2FS_IOC_MOVE_RANGE _IOWR(0xf5, 9, struct f2fs_move_range)

static int mode_of(const char *m)
{
	if (!strcmp(m, "rw"))
		return O_RDWR;
	if (!strcmp(m, "wo"))
		return O_WRONLY;
	return O_RDONLY;
}

int main(int argc, char **argv)
{
	struct f2fs_move_range r;
	int src, dst;

	if (argc != 8) {
		fprintf(stderr, "usage: move-range SRC SRC_MODE DST DST_MODE POS_IN POS_OUT LEN\n");
		return 2;
	}
	src = open(argv[1], mode_of(argv[2]));
	if (src < 0) {
		perror(argv[1]);
		return 2;
	}
	if (!strcmp(argv[4], "none")) {
		dst = 1000;
	} else {
		dst = open(argv[3], mode_of(argv[4]) | (strcmp(argv[4], "ro") ? O_CREAT : 0), 0644);
		if (dst < 0) {
			perror(argv[3]);
			return 2;
		}
	}
	r.dst_fd = (uint32_t)dst;
	r.pos_in = strtoull(argv[5], NULL, 0);
	r.pos_out = strtoull(argv[6], NULL, 0);
	r.len = strtoull(argv[7], NULL, 0);
	if (ioctl(src, F2FS_IOC_MOVE_RANGE, &r) < 0)
		printf("ERR %d\n", errno);
	else
		printf("OK\n");
	return 0;
}
