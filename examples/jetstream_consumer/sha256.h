/*
 * sha256.h: SHA-256 (FIPS 180-4) and the buffer hash.
 *
 * A consumer computes two things on the client side, while it buffers:
 *
 *   payload digest  D = SHA-256(record bytes)        (here: the message data)
 *   buffer hash     h0 = SHA-256("sog:buffer:v1")
 *                   hi = SHA-256(h(i-1) || be16(len(Pi)) || Pi || Di)
 *                   result = lowercase hex of h(n)
 *
 * with Pi the canonical text of the position (for JetStream: the stream
 * sequence in decimal).  These are the definitions of docs/reference.md's "Hash
 * definitions"; sog.payload_digest() and sog.buffer_hash() compute the
 * same on the server.  SHA-256 itself is OpenSSL's (libcrypto): sha256.c.
 */
#ifndef SHA256_H
#define SHA256_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/sha.h>

typedef struct Sha256
{
	SHA256_CTX	ctx;
} Sha256;

void		sha256_init(Sha256 *c);
void		sha256_update(Sha256 *c, const void *data, size_t n);
void		sha256_final(Sha256 *c, uint8_t out[32]);
void		sha256(const void *data, size_t n, uint8_t out[32]);

/* The buffer hash, one record at a time, in increasing position order. */
typedef struct BufferHash
{
	uint8_t		h[32];
} BufferHash;

void		buffer_hash_init(BufferHash *b);
void		buffer_hash_add(BufferHash *b, const char *pos_text,
							const uint8_t digest[32]);
void		buffer_hash_hex(const BufferHash *b, char out[65]);

/* Lowercase hex of n bytes into out (2n + 1 bytes). */
void		to_hex(const uint8_t *p, size_t n, char *out);

#endif
