/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The output directory of dust-invite create: made if missing, checked
 * before the store changes, filled through part files renamed at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outdir.h"

enum { PATH_CAP = 4096 };

/* DIR/invite-<n>.<ext><suffix>: ext "txt" for the text, "pw" for its own password. */
static int path_of(char *buf, const char *dir, unsigned n, const char *ext, const char *suffix)
{
	int len = snprintf(buf, PATH_CAP, "%s/invite-%u.%s%s", dir, n, ext, suffix);

	if (len < 0 || len >= PATH_CAP) {
		fprintf(stderr, "dust-invite: --out-dir path too long\n");
		return -1;
	}
	return 0;
}

/* mkdir -p with mode 0700 for what it creates: the texts are secrets. */
static int mkdirs(const char *dir)
{
	char p[PATH_CAP];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(p)) {
		fprintf(stderr, "dust-invite: bad --out-dir\n");
		return -1;
	}
	memcpy(p, dir, len + 1);
	for (char *c = p + 1; c <= p + len; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		*c = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST) {
			fprintf(stderr, "dust-invite: cannot create %s: %s\n", p, strerror(errno));
			return -1;
		}
		if (c < p + len)
			*c = '/';
	}
	return 0;
}

int outdir_prepare(const char *dir, unsigned count, bool with_pw)
{
	char path[PATH_CAP];
	struct stat sb;

	if (mkdirs(dir) != 0)
		return -1;
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "dust-invite: %s: not a directory\n", dir);
		return -1;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		fprintf(stderr, "dust-invite: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (unsigned n = 1; n <= count; n++) {
		for (int k = 0; k < (with_pw ? 2 : 1); k++) {
			if (path_of(path, dir, n, k ? "pw" : "txt", "") != 0)
				return -1;
			if (lstat(path, &sb) == 0) {
				fprintf(
				    stderr,
				    "dust-invite: %s exists: refusing to overwrite an invitation "
				    "(use another --out-dir)\n",
				    path);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * The text is a secret: mode 0600 from creation, whatever the umask or the
 * directory's mode, and never written through a link or into a file someone
 * planted at the part name (a stale part of a run that died is removed).
 */
static FILE *part_create(const char *path)
{
	int fd;
	FILE *f;

	(void)unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f)
		close(fd);
	return f;
}

static int part_write(const char *dir, unsigned n, const char *ext, const char *line)
{
	char path[PATH_CAP];
	FILE *f;

	if (path_of(path, dir, n, ext, ".part") != 0)
		return -1;
	f = part_create(path);
	if (!f || fprintf(f, "%s\n", line) < 0 || fflush(f) != 0) {
		fprintf(stderr, "dust-invite: %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	if (fclose(f) != 0) {
		fprintf(stderr, "dust-invite: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int outdir_write(const char *dir, unsigned n, const char *text, const char *pw)
{
	if (part_write(dir, n, "txt", text) != 0)
		return -1;
	return pw ? part_write(dir, n, "pw", pw) : 0;
}

int outdir_commit(const char *dir, unsigned n, bool with_pw)
{
	char from[PATH_CAP], to[PATH_CAP];

	for (unsigned i = 1; i <= n; i++) {
		for (int k = 0; k < (with_pw ? 2 : 1); k++) {
			const char *ext = k ? "pw" : "txt";

			if (path_of(from, dir, i, ext, ".part") != 0 ||
			    path_of(to, dir, i, ext, "") != 0)
				return -1;
			if (rename(from, to) != 0) {
				fprintf(stderr, "dust-invite: %s: %s\n", to, strerror(errno));
				return -1;
			}
		}
	}
	return 0;
}

void outdir_abort(const char *dir, unsigned n, bool with_pw)
{
	char path[PATH_CAP];

	for (unsigned i = 1; i <= n; i++)
		for (int k = 0; k < (with_pw ? 2 : 1); k++)
			if (path_of(path, dir, i, k ? "pw" : "txt", ".part") == 0)
				unlink(path);
}
