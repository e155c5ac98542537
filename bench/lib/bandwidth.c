/* Memory read bandwidth: each thread sums its slice of a large buffer (far larger than the last-level cache);
 * the best of several passes is reported in GB/s. Generation is bound by this figure (weights read per token). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { const uint64_t *base; size_t words; uint64_t sum; } slice_t;

static void *read_slice(void *arg) {
  slice_t *s = (slice_t *)arg;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i + 4 <= s->words; i += 4) {
    a += s->base[i]; b += s->base[i + 1]; c += s->base[i + 2]; d += s->base[i + 3];
  }
  s->sum = a + b + c + d;
  return NULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 512;
  int passes = argc > 3 ? atoi(argv[3]) : 5;
  if (threads < 1 || threads > 256 || mib < 64) return 2;
  size_t bytes = mib << 20, words = bytes / 8;
  uint64_t *buf = aligned_alloc(64, bytes);
  if (!buf) return 3;
  memset(buf, 1, bytes);
  pthread_t tid[256];
  slice_t sl[256];
  double best = 0;
  uint64_t check = 0;
  for (int p = 0; p < passes; p++) {
    double t0 = now_s();
    for (int t = 0; t < threads; t++) {
      sl[t].base = buf + words / threads * t;
      sl[t].words = words / threads;
      pthread_create(&tid[t], NULL, read_slice, &sl[t]);
    }
    for (int t = 0; t < threads; t++) { pthread_join(tid[t], NULL); check += sl[t].sum; }
    double gbs = (double)bytes / (now_s() - t0) / 1e9;
    if (gbs > best) best = gbs;
  }
  printf("{\"threads\":%d,\"mib\":%zu,\"passes\":%d,\"bestGBs\":%.2f,\"check\":%llu}\n", threads, mib, passes, best,
         (unsigned long long)(check & 0xff));
  free(buf);
  return 0;
}
