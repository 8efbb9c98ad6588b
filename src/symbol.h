/*-------------------------------------------------------------------------
 *
 * symbol.h
 *	  The address of a function another loaded library keeps hidden
 *	  (symbol.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_SYMBOL_H
#define SOG_SYMBOL_H

/*
 * The address of function name in the loaded library that exports anchor
 * (at anchor_addr), from the library's ELF symbol table or its debug file;
 * NULL if it cannot be found with certainty, *why then saying why.  Never
 * raises.
 */
extern void *sog_hidden_function(void *anchor_addr, const char *anchor,
								 const char *name, const char **why);

#endif							/* SOG_SYMBOL_H */
