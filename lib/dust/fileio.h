/* SPDX-License-Identifier: BSD-3-Clause */
/* Durable, private file helpers for key files and the invitation store. */
#ifndef DUST_FILEIO_H
#define DUST_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

/* dust_file_open_private, dust_file_append_private, dust_secret_read: in dust.h */
/*
 * Write data to a new temporary file beside path (O_EXCL|O_NOFOLLOW, created
 * with mode), fsync, rename over path, fsync the directory.
 */
int dust_file_replace(const char *path, const void *data, size_t len, mode_t mode);
/*
 * Create a temporary file beside path, its name in tmp (cap bytes):
 * O_EXCL|O_NOFOLLOW, mode set at creation. fd or -errno.
 */
int dust_file_tmp_create(const char *path, mode_t mode, char *tmp, size_t cap);
/* fsync the directory holding path (a rename into it made durable). 0 or -errno. */
int dust_dir_sync(const char *path);
/* write() all of buf, retrying short writes. 0 or -errno. */
int dust_write_all(int fd, const void *buf, size_t len);

#endif
