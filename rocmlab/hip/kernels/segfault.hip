// A host bug: writing through a null pointer. The program dies with SIGSEGV; the notebook does not.
#include <hip/hip_runtime.h>
#include <cstdio>

int main(int argc, char** argv) {
  int* volatile p = argc > 99 ? new int[1] : nullptr;   // volatile: the compiler cannot drop the bug
  printf("about to write through a null pointer\n"); fflush(stdout);
  p[0] = 42;
  printf("unreachable %d\n", p[0]);
  return 0;
}
