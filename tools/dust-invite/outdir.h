/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-invite create --out-dir: the invitation texts are written as part
 * files first and renamed into place only once the store is saved, so a
 * failed command leaves neither texts nor store changes behind.
 */
#ifndef DUST_INVITE_OUTDIR_H
#define DUST_INVITE_OUTDIR_H

#include <stdbool.h>

/* Create dir (and its parents, mode 0700) if missing; refuse if any of
 * invite-1..count.txt (and .pw, with_pw) exists there. 0 or -1 with a
 * message on stderr. */
int outdir_prepare(const char *dir, unsigned count, bool with_pw);
/* Write text (and pw, its own password, unless NULL) as the part files of
 * invitation n, mode 0600. 0 or -1 with a message. */
int outdir_write(const char *dir, unsigned n, const char *text, const char *pw);
/* Rename part files 1..n to invite-<n>.txt (and .pw). 0 or -1 with a message. */
int outdir_commit(const char *dir, unsigned n, bool with_pw);
/* Remove part files 1..n (after a failure). */
void outdir_abort(const char *dir, unsigned n, bool with_pw);

#endif
