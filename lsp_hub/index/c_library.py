"""The functions of C's standard library (ISO C, <stdlib.h>, <string.h>, <stdio.h>, <ctype.h>, <math.h> ...).

A prototype of one in a workspace file (Bison's parser.c declares `void free (void *);`) declares the library's
function, not one the workspace defines: the extractor leaves such prototypes out, so calls of `free` link nowhere
rather than to the generated parser. A workspace that defines one with a body (an allocator, a libc) keeps it.
"""

from __future__ import annotations

C_LIBRARY_FUNCTIONS = frozenset(
    """
    malloc calloc realloc free aligned_alloc alloca abort exit _Exit quick_exit atexit at_quick_exit getenv system
    atoi atol atoll atof strtol strtoll strtoul strtoull strtod strtof strtold abs labs llabs div ldiv lldiv
    rand srand qsort bsearch mblen mbtowc wctomb mbstowcs wcstombs
    memcpy memmove memset memcmp memchr strlen strnlen strcpy strncpy strcat strncat strcmp strncmp strcoll strxfrm
    strchr strrchr strstr strspn strcspn strpbrk strtok strerror strdup strndup
    printf fprintf sprintf snprintf vprintf vfprintf vsprintf vsnprintf scanf fscanf sscanf vscanf vfscanf vsscanf
    puts fputs gets fgets putc fputc putchar getc fgetc getchar ungetc fopen freopen fclose fflush fread fwrite
    fseek ftell rewind fgetpos fsetpos feof ferror clearerr perror remove rename tmpfile tmpnam setbuf setvbuf
    isalnum isalpha isblank iscntrl isdigit isgraph islower isprint ispunct isspace isupper isxdigit tolower toupper
    time clock difftime mktime asctime ctime gmtime localtime strftime
    setjmp longjmp signal raise setlocale localeconv
    sqrt pow exp log log10 log2 sin cos tan asin acos atan atan2 sinh cosh tanh floor ceil fabs fmod round trunc
    frexp ldexp modf hypot cbrt isnan isinf
    """.split()  # noqa: SIM905 - a list of 180 names, one per line, reads worse
)
