/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: invitations. First input byte picks the parser:
 * even: the 128-byte plaintext (dust_invite_unpack; what unpacks must pack
 * back to the same bytes); odd: invitation text (dust_invite_open). Text that
 * decodes to a full sealed invitation costs an Argon2id run (~0.1 s), so only
 * one such input in 64 (chosen by a hash of the input, to stay
 * deterministic) goes all the way; the rest exercise the decoder only.
 */
#include "fuzz_fixture.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	if (dust_init() < 0)
		abort();
	return 0;
}

static void plaintext(const uint8_t *data, size_t size)
{
	uint8_t pt[DUST_INVITE_PT_BYTES] = {0}, back[DUST_INVITE_PT_BYTES];
	struct dust_invite inv;

	memcpy(pt, data, size < sizeof(pt) ? size : sizeof(pt));
	if (dust_invite_unpack(&inv, pt) != 0)
		return;
	dust_invite_pack(&inv, back);
	if (memcmp(pt, back, sizeof(pt)) != 0)
		abort();
	dust_invite_wipe(&inv);
}

static bool full_length(const char *text)
{
	uint8_t sealed[DUST_INVITE_SEALED_BYTES];
	size_t binlen = 0;

	return sodium_base642bin(sealed, sizeof(sealed), text, strlen(text), " \t\r\n", &binlen,
				 NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING) == 0 &&
	       binlen == sizeof(sealed);
}

static void text(const uint8_t *data, size_t size)
{
	char *t = malloc(size + 1);
	struct dust_invite inv;
	uint8_t h;
	int rc;

	if (!t)
		return;
	memcpy(t, data, size);
	t[size] = '\0';
	crypto_generichash(&h, 1, data, size, NULL, 0);
	if (!full_length(t) || h % 64 == 0) {
		rc = dust_invite_open(&inv, t, "fuzz password", 13);
		if (rc != 0 && rc != -EINVAL && rc != -EBADMSG && rc != -ENOMEM)
			abort();
		if (rc == 0)
			dust_invite_wipe(&inv);
	}
	free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > 4096)
		return -1;
	if (data[0] % 2 == 0)
		plaintext(data + 1, size - 1);
	else
		text(data + 1, size - 1);
	return 0;
}
