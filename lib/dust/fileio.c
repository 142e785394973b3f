/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Durable and private file I/O: write-then-rename with fsync of file and
 * directory, so a crash or a full disk leaves either the old file or the
 * new one, never half of either; a permission check for secrets; and no
 * core dump of a process that holds them.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "dust_pvt.h"
#include "fileio.h"

/*
 * A core file would hold the server key, the store's K_inv and session
 * keys in the clear, in the working directory or a crash collector's
 * spool. RLIMIT_CORE 0 stops a file core; only PR_SET_DUMPABLE 0 stops a
 * core_pattern pipe (the kernel ignores the limit there).
 */
DUST_EXPORT int dust_core_dumps_off(void)
{
	const struct rlimit none = {0, 0};

	if (setrlimit(RLIMIT_CORE, &none) != 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		return dust_fail(errno, "disabling core dumps: %s", strerror(errno));
	return 0;
}

/*
 * The rules for a file that holds secrets, checked on the open descriptor
 * (so a rename between check and read changes nothing): a regular file (a
 * FIFO would hang the reader, a device or directory is no key), owned by
 * this user or by root (anyone else could have put their own key or
 * password there), and, for keys and stores, no access by group or others.
 * *shared, when given, says whether group or others may read it.
 */
static int secret_fd_check(int fd, const char *path, bool private, bool *shared)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return dust_fail(errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return dust_fail(EPERM, "%s: holds secrets but is not a regular file", path);
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return dust_fail(
		    EPERM, "%s: holds secrets but is owned by uid %u, not by this user or root",
		    path, (unsigned)st.st_uid);
	if (private && (st.st_mode & 077))
		return dust_fail(EPERM,
		                 "%s: holds secrets but is accessible by group or others "
		                 "(mode %03o); run: chmod 600 %s",
		                 path, (unsigned)(st.st_mode & 0777), path);
	if (shared)
		*shared = (st.st_mode & 044) != 0;
	return 0;
}

/*
 * Open a file that holds secrets: the file itself, never a symbolic link
 * to it (O_NOFOLLOW: a link planted where the key was expected would lead
 * a root tool to read or append to a file of the planter's choosing), and
 * without blocking on a FIFO (O_NONBLOCK, cleared once it is known to be a
 * regular file). fd or -errno.
 */
static int secret_open(const char *path, int flags, mode_t mode, bool private, bool *shared)
{
	int rc, fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, mode);

	if (fd < 0 && errno == ELOOP)
		return dust_fail(ELOOP,
		                 "%s: is a symbolic link; a file that holds secrets must be "
		                 "named directly",
		                 path);
	/* a FIFO with no reader, opened to write without blocking */
	if (fd < 0 && errno == ENXIO)
		return dust_fail(EPERM, "%s: holds secrets but is not a regular file", path);
	if (fd < 0)
		return dust_fail(errno, "%s: %s", path, strerror(errno));
	rc = secret_fd_check(fd, path, private, shared);
	if (!rc && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
		rc = dust_fail(errno, "%s: %s", path, strerror(errno));
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

DUST_EXPORT int dust_file_open_private(const char *path)
{
	return secret_open(path, O_RDONLY, 0, true, NULL);
}

DUST_EXPORT int dust_file_append_private(const char *path)
{
	return secret_open(path, O_WRONLY | O_CREAT | O_APPEND, 0600, true, NULL);
}

DUST_EXPORT int dust_secret_read(const char *path, char *buf, size_t cap, bool *shared)
{
	size_t n = 0;
	int fd = secret_open(path, O_RDONLY, 0, false, shared);

	if (fd < 0)
		return fd;
	/* one byte more than fits: a longer file is refused, never cut */
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (n == cap) {
		sodium_memzero(buf, cap);
		return dust_fail(EFBIG, "%s: longer than %zu bytes", path, cap - 1);
	}
	buf[n] = '\0';
	return 0;
}

int dust_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOSPC;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int dust_dir_sync(const char *path)
{
	char copy[PATH_MAX];
	int fd, rc = 0;

	snprintf(copy, sizeof(copy), "%s", path);
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) != 0)
		rc = -errno;
	close(fd);
	return rc;
}

/*
 * A temporary file beside path (same directory, so rename is atomic), made
 * by this call alone: O_EXCL|O_NOFOLLOW never opens what someone planted
 * there (a symlink to a victim file, a file they own and can read), and the
 * mode is set at creation, never widened. A random name, so that writers
 * on one store do not share one temporary file either.
 */
int dust_file_tmp_create(const char *path, mode_t mode, char *tmp, size_t cap)
{
	for (int tries = 0; tries < 8; tries++) {
		uint8_t r[8];
		char hex[2 * sizeof(r) + 1];
		int fd;

		randombytes_buf(r, sizeof(r));
		sodium_bin2hex(hex, sizeof(hex), r, sizeof(r));
		if (snprintf(tmp, cap, "%s.tmp-%s", path, hex) >= (int)cap)
			return dust_fail(ENAMETOOLONG, "%s: path too long", path);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return dust_fail(errno, "%s: %s", tmp, strerror(errno));
	}
	return dust_fail(EEXIST, "%s: no free temporary name beside it", path);
}

int dust_file_replace(const char *path, const void *data, size_t len, mode_t mode)
{
	char tmp[PATH_MAX];
	int rc, fd = dust_file_tmp_create(path, mode, tmp, sizeof(tmp));

	if (fd < 0)
		return fd;
	rc = dust_write_all(fd, data, len);
	if (!rc && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) != 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return dust_fail(-rc, "%s: not written (%s); the previous file is unchanged", path,
		                 strerror(-rc));
	}
	rc = dust_dir_sync(path);
	if (rc)
		return dust_fail(-rc, "%s: directory fsync failed: %s", path, strerror(-rc));
	return 0;
}
