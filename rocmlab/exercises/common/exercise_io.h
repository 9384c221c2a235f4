// exercise_io.h: read the grader's input arrays and write the outputs (host code only,
// the same for CUDA and HIP). Format ("RLX1"): magic, uint32 count, then per array:
// a kind byte ('f' float32, 'i' int32, 'u' uint32), 7 pad bytes, uint64 length, data.
// A program is run as `prog INPUT OUTPUT`; rocmlab.grader.rlx writes and reads these files.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace xio {

struct Array {
    char kind = 0;
    std::vector<unsigned char> bytes;
    size_t size() const { return bytes.size() / 4; }
    const float* f32() const { check('f'); return reinterpret_cast<const float*>(bytes.data()); }
    const int32_t* i32() const { check('i'); return reinterpret_cast<const int32_t*>(bytes.data()); }
    const uint32_t* u32() const { check('u'); return reinterpret_cast<const uint32_t*>(bytes.data()); }
    void check(char want) const {
        if (kind != want) { std::fprintf(stderr, "exercise_io: array has kind '%c', expected '%c'\n", kind, want); std::exit(3); }
    }
};

inline std::vector<Array> load(const char* path) {
    std::vector<Array> out;
    FILE* f = std::fopen(path, "rb");
    if (!f) { std::fprintf(stderr, "exercise_io: cannot open input %s\n", path); std::exit(3); }
    char magic[4]; uint32_t count = 0;
    if (std::fread(magic, 1, 4, f) != 4 || std::memcmp(magic, "RLX1", 4) != 0 || std::fread(&count, 4, 1, f) != 1) {
        std::fprintf(stderr, "exercise_io: %s is not an exercise input file\n", path); std::exit(3);
    }
    for (uint32_t i = 0; i < count; ++i) {
        unsigned char head[8]; uint64_t n = 0;
        if (std::fread(head, 1, 8, f) != 8 || std::fread(&n, 8, 1, f) != 1) { std::fprintf(stderr, "exercise_io: truncated\n"); std::exit(3); }
        Array a; a.kind = static_cast<char>(head[0]); a.bytes.resize(n * 4);
        if (n && std::fread(a.bytes.data(), 4, n, f) != n) { std::fprintf(stderr, "exercise_io: truncated data\n"); std::exit(3); }
        out.push_back(std::move(a));
    }
    std::fclose(f);
    return out;
}

class Writer {
  public:
    explicit Writer(const char* path) : path_(path) {}
    void f32(const float* p, size_t n) { add('f', p, n); }
    void i32(const int32_t* p, size_t n) { add('i', p, n); }
    void u32(const uint32_t* p, size_t n) { add('u', p, n); }
    void scalar(float v) { f32(&v, 1); }
    ~Writer() { save(); }
    void save() {
        if (saved_) return;
        saved_ = true;
        FILE* f = std::fopen(path_, "wb");
        if (!f) { std::fprintf(stderr, "exercise_io: cannot write %s\n", path_); std::exit(3); }
        uint32_t count = static_cast<uint32_t>(arrays_.size());
        std::fwrite("RLX1", 1, 4, f); std::fwrite(&count, 4, 1, f);
        for (const Array& a : arrays_) {
            unsigned char head[8] = {static_cast<unsigned char>(a.kind), 0, 0, 0, 0, 0, 0, 0};
            uint64_t n = a.size();
            std::fwrite(head, 1, 8, f); std::fwrite(&n, 8, 1, f);
            if (n) std::fwrite(a.bytes.data(), 4, n, f);
        }
        std::fclose(f);
    }
  private:
    void add(char kind, const void* p, size_t n) {
        Array a; a.kind = kind; a.bytes.resize(n * 4);
        if (n) std::memcpy(a.bytes.data(), p, n * 4);
        arrays_.push_back(std::move(a));
    }
    const char* path_;
    bool saved_ = false;
    std::vector<Array> arrays_;
};

inline void usage_if(int argc, char** argv) {
    if (argc < 3) { std::fprintf(stderr, "usage: %s INPUT OUTPUT (files written by rocmlab.grader)\n", argv[0]); std::exit(2); }
}

}  // namespace xio
