/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * X25519 identities in key files: the secret as one line of hex, written
 * 0600 by write-then-rename, and refused on load if group or others may
 * read or write it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "dust_pvt.h"
#include "fileio.h"

DUST_EXPORT int dust_identity_generate(struct dust_identity *id)
{
	randombytes_buf(id->sk, sizeof(id->sk));
	if (crypto_scalarmult_base(id->pk, id->sk) != 0)
		return dust_fail(EINVAL, "X25519 rejected the generated key");
	return 0;
}

DUST_EXPORT int dust_identity_save(const struct dust_identity *id, const char *path)
{
	char hex[2 * DUST_KEY_BYTES + 2];
	int rc;

	sodium_bin2hex(hex, sizeof(hex), id->sk, sizeof(id->sk));
	hex[2 * DUST_KEY_BYTES] = '\n';
	rc = dust_file_replace(path, hex, 2 * DUST_KEY_BYTES + 1, 0600);
	sodium_memzero(hex, sizeof(hex));
	return rc;
}

DUST_EXPORT int dust_identity_load(struct dust_identity *id, const char *path)
{
	char buf[256];
	size_t binlen = 0;
	ssize_t n;
	int rc = 0, fd;

	fd = dust_file_open_private(path);
	if (fd < 0)
		return fd;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return dust_fail(errno, "%s: %s", path, strerror(errno));
	buf[n] = '\0';
	if (sodium_hex2bin(id->sk, sizeof(id->sk), buf, (size_t)n, " \r\n\t", &binlen, NULL) != 0 ||
	    binlen != sizeof(id->sk))
		rc = dust_fail(EINVAL, "%s: not a key file (expected 64 hex digits)", path);
	else if (crypto_scalarmult_base(id->pk, id->sk) != 0)
		rc = dust_fail(EINVAL, "%s: unusable X25519 key", path);
	sodium_memzero(buf, sizeof(buf));
	if (rc)
		dust_identity_wipe(id);
	return rc;
}

DUST_EXPORT void dust_identity_wipe(struct dust_identity *id)
{
	sodium_memzero(id, sizeof(*id));
}
