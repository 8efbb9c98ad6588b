/*-------------------------------------------------------------------------
 *
 * symbol.c
 *	  The address of a function another loaded library keeps hidden.
 *
 * The extension asks Citus for two-phase commit through its C function
 * Use2PCForCoordinatedTransaction (tables.c says why).  Citus does not
 * export it: it is a plain global function, and PostgreSQL 16 and later
 * build every PGXS module with -fvisibility=hidden, so the dynamic linker
 * (dlsym, load_external_function) no longer sees it; on 15 it does.  The
 * function is still in the library's own ELF symbol table (.symtab) when
 * the library is not stripped (a build from source), or in its separate
 * debug file (/usr/lib/debug/.build-id/NN/REST.debug, what a distribution's
 * debug-symbols package installs).  This file finds it there:
 *
 *  1. the library is the one the backend loaded: found from the address of
 *     an exported function of it (the anchor, e.g. _PG_init) with
 *     dladdr1(), which gives its file name and load bias (l_addr);
 *  2. the symbol table is read from that file, or from the debug file its
 *     GNU build-id names; every offset and size is checked against the
 *     file's length;
 *  3. the answer is trusted only if the table also places the anchor at
 *     the address the dynamic linker gave it (so the table and the loaded
 *     image agree on the layout), and, where both carry a build-id, the
 *     file's is the loaded image's (a library replaced on disk after it was
 *     loaded is refused).
 *
 * Nothing here raises: a lookup that fails returns NULL and says why, and
 * the caller decides (tables.c refuses the sink transaction with 0A000).
 * Linux (glibc) only; elsewhere the lookup says so.
 *
 * Relies on: PostgreSQL only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "symbol.h"

#if defined(__GLIBC__)

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file mapped read-only. */
typedef struct MappedFile
{
	const unsigned char *data;
	size_t		len;
} MappedFile;

static bool
map_file(const char *path, MappedFile *f)
{
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void	   *p;

	f->data = NULL;
	f->len = 0;
	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t) sizeof(ElfW(Ehdr)))
	{
		close(fd);
		return false;
	}
	p = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return false;
	f->data = p;
	f->len = (size_t) st.st_size;
	return true;
}

static void
unmap_file(MappedFile *f)
{
	if (f->data)
		munmap((void *) f->data, f->len);
	f->data = NULL;
}

/* Is [off, off + len) inside the file? */
static bool
in_file(const MappedFile *f, uint64 off, uint64 len)
{
	return off <= f->len && len <= f->len - off;
}

/* The ELF header of f, if it is an ELF file of this machine's kind. */
static const ElfW(Ehdr) *
elf_header(const MappedFile *f)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *) f->data;
	const ElfW(Ehdr) *self = NULL;
	Dl_info		info;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
		eh->e_shentsize != sizeof(ElfW(Shdr)) ||
		!in_file(f, eh->e_shoff, (uint64) eh->e_shnum * sizeof(ElfW(Shdr))))
		return NULL;
	/* the same class, byte order and machine as this library's own image */
	if (dladdr((void *) elf_header, &info) && info.dli_fbase)
		self = (const ElfW(Ehdr) *) info.dli_fbase;
	if (self && (eh->e_ident[EI_CLASS] != self->e_ident[EI_CLASS] ||
				 eh->e_ident[EI_DATA] != self->e_ident[EI_DATA] ||
				 eh->e_machine != self->e_machine))
		return NULL;
	return eh;
}

/*
 * The GNU build-id in the notes [p, p + len), or NULL; *idlen gets its
 * length.
 */
static const unsigned char *
build_id_in_notes(const unsigned char *p, size_t len, size_t *idlen)
{
	size_t		off = 0;

	while (off + sizeof(ElfW(Nhdr)) <= len)
	{
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *) (p + off);
		size_t		name = off + sizeof(ElfW(Nhdr));
		size_t		desc = name + TYPEALIGN(4, n->n_namesz);
		size_t		next = desc + TYPEALIGN(4, n->n_descsz);

		if (desc > len || next > len || next <= off)
			return NULL;
		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			memcmp(p + name, "GNU", 4) == 0 && n->n_descsz > 0)
		{
			*idlen = n->n_descsz;
			return p + desc;
		}
		off = next;
	}
	return NULL;
}

/* The build-id of file f (from its note sections), or NULL. */
static const unsigned char *
file_build_id(const MappedFile *f, size_t *idlen)
{
	const ElfW(Ehdr) *eh = elf_header(f);
	const ElfW(Shdr) *sh;
	int			i;

	if (eh == NULL)
		return NULL;
	sh = (const ElfW(Shdr) *) (f->data + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++)
	{
		const unsigned char *id;

		if (sh[i].sh_type != SHT_NOTE || !in_file(f, sh[i].sh_offset, sh[i].sh_size))
			continue;
		id = build_id_in_notes(f->data + sh[i].sh_offset, sh[i].sh_size, idlen);
		if (id)
			return id;
	}
	return NULL;
}

/* What dl_iterate_phdr looks for: the loaded object at a load bias. */
typedef struct LoadedId
{
	ElfW(Addr)	bias;
	const unsigned char *id;
	size_t		idlen;
} LoadedId;

static int
loaded_id_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	LoadedId   *l = arg;
	int			i;

	if (info->dlpi_addr != l->bias)
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++)
	{
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_NOTE)
		{
			l->id = build_id_in_notes((const unsigned char *) (info->dlpi_addr + ph->p_vaddr),
									  ph->p_memsz, &l->idlen);
			if (l->id)
				break;
		}
	}
	return 1;
}

/*
 * Find name and anchor in the symbol table (SHT_SYMTAB) of f.  Returns
 * false if f has none; otherwise *value and *anchor_value are their
 * st_value (0 when missing).
 */
static bool
symtab_lookup(const MappedFile *f, const char *name, const char *anchor,
			  ElfW(Addr) *value, ElfW(Addr) *anchor_value)
{
	const ElfW(Ehdr) *eh = elf_header(f);
	const ElfW(Shdr) *sh;
	bool		found_table = false;
	int			i;

	*value = *anchor_value = 0;
	if (eh == NULL)
		return false;
	sh = (const ElfW(Shdr) *) (f->data + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++)
	{
		const ElfW(Shdr) *strs;
		const ElfW(Sym) *syms;
		size_t		nsyms,
					j;

		if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_entsize != sizeof(ElfW(Sym)) ||
			sh[i].sh_link >= eh->e_shnum || !in_file(f, sh[i].sh_offset, sh[i].sh_size))
			continue;
		strs = &sh[sh[i].sh_link];
		if (strs->sh_type != SHT_STRTAB || !in_file(f, strs->sh_offset, strs->sh_size))
			continue;
		found_table = true;
		syms = (const ElfW(Sym) *) (f->data + sh[i].sh_offset);
		nsyms = sh[i].sh_size / sizeof(ElfW(Sym));
		/* (ELF32_ST_TYPE is the same low four bits) */
		for (j = 0; j < nsyms; j++)
		{
			const char *s;
			size_t		room;

			if (ELF64_ST_TYPE(syms[j].st_info) != STT_FUNC || syms[j].st_shndx == SHN_UNDEF ||
				syms[j].st_name >= strs->sh_size)
				continue;
			s = (const char *) f->data + strs->sh_offset + syms[j].st_name;
			room = strs->sh_size - syms[j].st_name;
			if (strnlen(s, room) == room)
				continue;		/* not terminated inside the table */
			if (strcmp(s, name) == 0)
				*value = syms[j].st_value;
			else if (strcmp(s, anchor) == 0)
				*anchor_value = syms[j].st_value;
		}
	}
	return found_table;
}

/* The separate debug file of build-id id, as distributions install it. */
static char *
debug_file_path(const unsigned char *id, size_t idlen)
{
	StringInfoData p;
	size_t		i;

	initStringInfo(&p);
	appendStringInfo(&p, "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (i = 1; i < idlen; i++)
		appendStringInfo(&p, "%02x", id[i]);
	appendStringInfoString(&p, ".debug");
	return p.data;
}

void *
sog_hidden_function(void *anchor_addr, const char *anchor, const char *name,
					const char **why)
{
	Dl_info		info;
	struct link_map *lm = NULL;
	MappedFile	lib,
				dbg = {NULL, 0};
	const unsigned char *id;
	size_t		idlen = 0;
	LoadedId	loaded = {0, NULL, 0};
	ElfW(Addr)	value,
				anchor_value;
	void	   *result = NULL;

	*why = NULL;
	if (!dladdr1(anchor_addr, &info, (void **) &lm, RTLD_DL_LINKMAP) || lm == NULL ||
		info.dli_fname == NULL)
	{
		*why = "the loaded library could not be identified";
		return NULL;
	}
	if (!map_file(info.dli_fname, &lib))
	{
		*why = "the library's file could not be read";
		return NULL;
	}
	id = file_build_id(&lib, &idlen);
	loaded.bias = lm->l_addr;
	dl_iterate_phdr(loaded_id_cb, &loaded);
	if (id && loaded.id && (idlen != loaded.idlen || memcmp(id, loaded.id, idlen) != 0))
		*why = "the library's file is not the one loaded (it was replaced since)";
	else if (!symtab_lookup(&lib, name, anchor, &value, &anchor_value) &&
			 !(id && map_file(debug_file_path(id, idlen), &dbg) &&
			   symtab_lookup(&dbg, name, anchor, &value, &anchor_value)))
		*why = "the library is stripped, and no debug file of its build-id is installed";
	else if (value == 0)
		*why = "its symbol table has no such function";
	else if (anchor_value == 0 || (void *) (lm->l_addr + anchor_value) != anchor_addr)
		*why = "its symbol table does not match the loaded library";
	else
		result = (void *) (lm->l_addr + value);
	unmap_file(&lib);
	unmap_file(&dbg);
	return result;
}

#else							/* !__GLIBC__ */

void *
sog_hidden_function(void *anchor_addr, const char *anchor, const char *name,
					const char **why)
{
	*why = "finding an unexported function is implemented for Linux (glibc) only";
	return NULL;
}

#endif
