/* Old C on purpose: an implicit int, a K&R definition, malloc without a cast (valid C, not C++). */
#include <stdlib.h>
#include "util.h"

static scale = 3;

int checksum(v, n)
const int *v;
int n;
{
    unsigned s = 7;
    int i;
    for (i = 0; i < n; i++)
        s = s * 31u + (unsigned)v[i];
    return (int)(s % 1000003u);
}

int *make_input(int n, unsigned seed)
{
    int *p = malloc(n * sizeof(int));
    int i;
    for (i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (int)((seed >> 16) % 100u) * scale;
    }
    return p;
}
