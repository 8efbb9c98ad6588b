/*
 * sha256.c: SHA-256 and the buffer hash.
 * See sha256.h for the definitions.
 *
 * SHA-256 is OpenSSL's (libcrypto, which libpq already loads on every
 * Debian and major distribution): SHA256_Init/Update/Final, which use the
 * CPU's SHA extensions where it has them.  A digest through them costs a
 * fraction of a portable C implementation's: the consumer hashes every
 * payload and, for the next page's read boundary, chains every record
 * again, so at a page of 500 events the hashing was a tenth of the time a
 * page took.
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
check(int ok)
{
	if (ok != 1)
	{
		fprintf(stderr, "sog_jetstream_consumer: OpenSSL's SHA-256 failed\n");
		abort();
	}
}

void
sha256_init(Sha256 *c)
{
	check(SHA256_Init(&c->ctx));
}

void
sha256_update(Sha256 *c, const void *data, size_t n)
{
	check(SHA256_Update(&c->ctx, data, n));
}

void
sha256_final(Sha256 *c, uint8_t out[32])
{
	check(SHA256_Final(out, &c->ctx));
}

void
sha256(const void *data, size_t n, uint8_t out[32])
{
	Sha256		c;

	sha256_init(&c);
	sha256_update(&c, data, n);
	sha256_final(&c, out);
}

void
buffer_hash_init(BufferHash *b)
{
	sha256("sog:buffer:v1", 13, b->h);
}

/* h = SHA-256(h || be16(len(P)) || P || D) */
void
buffer_hash_add(BufferHash *b, const char *pos_text, const uint8_t digest[32])
{
	Sha256		c;
	size_t		len = strlen(pos_text);
	uint8_t		be16[2] = {(uint8_t) (len >> 8), (uint8_t) len};

	sha256_init(&c);
	sha256_update(&c, b->h, 32);
	sha256_update(&c, be16, 2);
	sha256_update(&c, pos_text, len);
	sha256_update(&c, digest, 32);
	sha256_final(&c, b->h);
}

void
buffer_hash_hex(const BufferHash *b, char out[65])
{
	to_hex(b->h, 32, out);
}

void
to_hex(const uint8_t *p, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t		i;

	for (i = 0; i < n; i++)
	{
		out[2 * i] = hex[p[i] >> 4];
		out[2 * i + 1] = hex[p[i] & 15];
	}
	out[2 * n] = '\0';
}
