/*
 * casefold-flag: sets the casefold flag (FS_CASEFOLD_FL, what `chattr +F` sets) on
 * directories, or with -p prints each one's inode flags in hex. The kernel check's
 * guest has busybox only, whose chattr does not know +F; make-fixtures.sh builds this
 * statically and hands it to the guest (scripts/kernel/workloads/casefold.sh).
 *
 * usage: casefold-flag [-p] DIR...
 */
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#ifndef FS_CASEFOLD_FL
#define FS_CASEFOLD_FL 0x40000000
#endif

int main(int argc, char **argv)
{
	int print = argc > 1 && strcmp(argv[1], "-p") == 0;

	for (int i = 1 + print; i < argc; i++) {
		int flags = 0;
		int fd = open(argv[i], O_RDONLY | O_DIRECTORY);

		if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (print) {
			printf("%s 0x%08x\n", argv[i], (unsigned)flags);
		} else {
			flags |= FS_CASEFOLD_FL;
			if (ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0) {
				perror(argv[i]);
				return 1;
			}
		}
		close(fd);
	}
	return 0;
}
