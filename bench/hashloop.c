/*
 * hashloop.c - the computations of sog.buffer_hash in a plain C loop,
 * outside PostgreSQL: the reference for the buffer_hash micro-figure.
 *
 * For records i = 1..N with a 100-byte payload each (the same bytes as
 * bench/micro.sql: rpad(i::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz')):
 *
 *     D_i = SHA-256(payload_i)                                 payload digest
 *     h_i = SHA-256(h_(i-1) || be16(len(P_i)) || P_i || D_i)   chain step
 *     h_0 = SHA-256("sog:buffer:v1"),  P_i = decimal text of i
 *
 * Payloads are built in memory before the clock starts (PostgreSQL reads
 * them from a table).  Three ways of calling OpenSSL are timed: the low-level
 * SHA256_Init/Update/Final; EVP_DigestInit_ex(EVP_sha256())/Update/Final_ex
 * with one reused context (what PostgreSQL 15's cryptohash layer calls; in
 * OpenSSL 3 each such init looks the algorithm up again); and, with OpenSSL
 * 3, the same with an EVP_MD fetched once (EVP_MD_fetch + EVP_DigestInit_ex2).
 * Prints, per method, one line: method|N|median_s|min_s|max_s|hex of h_N
 * (1 warm-up pass, then RUNS timed passes; median of those).  The hex must
 * equal sog.buffer_hash over the same records.
 *
 *   cc -O2 -o hashloop hashloop.c -lcrypto
 *   ./hashloop [N=1000000] [RUNS=5]
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if OPENSSL_VERSION_NUMBER >= 0x30000000L
#define HAVE_EVP_FETCH 1
#endif

#define PAYLOAD_LEN 100
static const char FILL[] = " payload 0123456789abcdefghijklmnopqrstuvwxyz";
static const char SEED[] = "sog:buffer:v1";

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* decimal text of v into buf; returns its length */
static int
fmt_u64(unsigned long long v, char *buf)
{
	char		tmp[24];
	int			n = 0,
				i;

	do
	{
		tmp[n++] = (char) ('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

/* PostgreSQL's rpad(text, 100, FILL) of the decimal text of i */
static void
make_payload(unsigned long long i, unsigned char *out)
{
	char		txt[24];
	int			n = fmt_u64(i, txt),
				k,
				fl = (int) strlen(FILL);

	if (n > PAYLOAD_LEN)
		n = PAYLOAD_LEN;
	memcpy(out, txt, n);
	for (k = 0; n < PAYLOAD_LEN; n++, k++)
		out[n] = (unsigned char) FILL[k % fl];
}

static void
step_lowlevel(unsigned char *h, const unsigned char *payload, unsigned long long i)
{
	SHA256_CTX	c;
	unsigned char d[32],
				be16[2];
	char		txt[24];
	int			tl;

	SHA256_Init(&c);
	SHA256_Update(&c, payload, PAYLOAD_LEN);
	SHA256_Final(d, &c);
	tl = fmt_u64(i, txt);
	be16[0] = (unsigned char) (tl >> 8);
	be16[1] = (unsigned char) (tl & 0xFF);
	SHA256_Init(&c);
	SHA256_Update(&c, h, 32);
	SHA256_Update(&c, be16, 2);
	SHA256_Update(&c, txt, tl);
	SHA256_Update(&c, d, 32);
	SHA256_Final(h, &c);
}

static void
evp_init(EVP_MD_CTX *c, const EVP_MD *md, int ex2)
{
#ifdef HAVE_EVP_FETCH
	if (ex2)
	{
		EVP_DigestInit_ex2(c, md, NULL);
		return;
	}
#endif
	(void) ex2;
	EVP_DigestInit_ex(c, md, NULL);
}

static void
step_evp(EVP_MD_CTX *c, const EVP_MD *md, int ex2, unsigned char *h,
		 const unsigned char *payload, unsigned long long i)
{
	unsigned char d[32],
				be16[2];
	char		txt[24];
	int			tl;

	evp_init(c, md, ex2);
	EVP_DigestUpdate(c, payload, PAYLOAD_LEN);
	EVP_DigestFinal_ex(c, d, NULL);
	tl = fmt_u64(i, txt);
	be16[0] = (unsigned char) (tl >> 8);
	be16[1] = (unsigned char) (tl & 0xFF);
	evp_init(c, md, ex2);
	EVP_DigestUpdate(c, h, 32);
	EVP_DigestUpdate(c, be16, 2);
	EVP_DigestUpdate(c, txt, tl);
	EVP_DigestUpdate(c, d, 32);
	EVP_DigestFinal_ex(c, h, NULL);
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	long		n = argc > 1 ? atol(argv[1]) : 1000000;
	int			runs = argc > 2 ? atoi(argv[2]) : 5;
	unsigned char *payloads;
	double	   *t;
	int			method;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const EVP_MD *md = EVP_sha256();
	const EVP_MD *fetched = md;
	int			nmethods = 2;

	if (n < 1 || runs < 1 || ctx == NULL)
		return 2;
	payloads = malloc((size_t) n * PAYLOAD_LEN);
	t = malloc(sizeof(double) * runs);
	if (payloads == NULL || t == NULL)
		return 2;
	for (long i = 0; i < n; i++)
		make_payload((unsigned long long) i + 1, payloads + (size_t) i * PAYLOAD_LEN);

#ifdef HAVE_EVP_FETCH
	if ((fetched = EVP_MD_fetch(NULL, "SHA256", NULL)) != NULL)
		nmethods = 3;
#endif
	for (method = 0; method < nmethods; method++)
	{
		unsigned char h[32];
		char		hex[65];

		for (int r = -1; r < runs; r++)
		{
			double		t0 = now_s();

			SHA256((const unsigned char *) SEED, strlen(SEED), h);
			for (long i = 0; i < n; i++)
			{
				const unsigned char *p = payloads + (size_t) i * PAYLOAD_LEN;

				if (method == 0)
					step_lowlevel(h, p, (unsigned long long) i + 1);
				else
					step_evp(ctx, method == 1 ? md : fetched, method == 2, h, p, (unsigned long long) i + 1);
			}
			if (r >= 0)
				t[r] = now_s() - t0;
		}
		for (int k = 0; k < 32; k++)
			sprintf(hex + 2 * k, "%02x", h[k]);
		qsort(t, runs, sizeof(double), cmp_double);
		printf("%s|%ld|%.6f|%.6f|%.6f|%s\n",
			   method == 0 ? "C loop, OpenSSL SHA256_Init/Update/Final" :
			   method == 1 ? "C loop, OpenSSL EVP_Digest* (reused ctx)" :
			   "C loop, OpenSSL EVP_Digest* (EVP_MD fetched once)",
			   n, t[runs / 2], t[0], t[runs - 1], hex);
	}
#ifdef HAVE_EVP_FETCH
	if (nmethods == 3)
		EVP_MD_free((EVP_MD *) fetched);
#endif
	EVP_MD_CTX_free(ctx);
	free(payloads);
	free(t);
	return 0;
}
