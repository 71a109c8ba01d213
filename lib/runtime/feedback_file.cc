#include "runtime/feedback_file.h"

#include "codec/frame.h"
#include "util/dtype.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

namespace terse {

namespace {

constexpr char kMagic[8] = {'T', 'E', 'R', 'S', 'E', '-', 'F', 'B'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kLittle = 1, kBig = 2;

uint32_t host_order() {
    const uint16_t probe = 1;
    uint8_t first;
    std::memcpy(&first, &probe, 1);
    return first ? kLittle : kBig;
}

void put(std::string *out, uint64_t v, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) out->push_back(char(uint8_t(v >> (8 * i))));
}

// Reads fields in order; running past the end makes every later read fail,
// so the caller checks once per section.
class Reader {
public:
    Reader(const std::string &b, size_t end) : b_(b), end_(end) {}
    bool u(size_t bytes, uint64_t *v) {
        if (end_ - pos_ < bytes) return ok_ = false;
        uint64_t x = 0;
        for (size_t i = 0; i < bytes; ++i) x |= uint64_t(uint8_t(b_[pos_ + i])) << (8 * i);
        pos_ += bytes;
        *v = x;
        return true;
    }
    const char *take(size_t bytes) {
        if (end_ - pos_ < bytes) {
            ok_ = false;
            return nullptr;
        }
        pos_ += bytes;
        return b_.data() + pos_ - bytes;
    }
    bool ok() const { return ok_; }
    size_t pos() const { return pos_; }

private:
    const std::string &b_;
    size_t end_;
    size_t pos_ = 0;
    bool ok_ = true;
};

constexpr size_t kFixedHeader = 40;  // up to and including L
constexpr size_t kCheck = 4;

Status corrupt(const std::string &file, const char *what) {
    return set_error(TERSE_ERR_CORRUPT, "error feedback file '%s' is corrupt: %s", file.c_str(), what);
}

}  // namespace

std::string feedback_file_name(const std::string &path, int rank) {
    return path + ".rank" + std::to_string(rank);
}

Status feedback_file_encode(const FeedbackFileOrigin &origin, const FeedbackStore *store,
                            const FeedbackKeyer::Ordinals &ordinals, std::string *out) {
    try {
        std::string &o = *out;
        o.clear();
        o.append(kMagic, sizeof kMagic);
        put(&o, kVersion, 4);
        put(&o, host_order(), 4);
        put(&o, 0, 8);  // the length, known at the end
        put(&o, uint32_t(origin.rank), 4);
        put(&o, uint32_t(origin.size), 4);
        put(&o, uint32_t(origin.mode), 4);
        put(&o, origin.codec.size(), 4);
        o += origin.codec;
        put(&o, store ? store->clock() : 0, 8);
        put(&o, ordinals.size(), 4);
        for (const auto &[shape, next] : ordinals) {
            put(&o, shape, 8);
            put(&o, next, 8);
        }
        put(&o, store ? store->contents().size() : 0, 4);
        if (store)
            for (const FeedbackStore::Entry &e : store->contents()) {
                put(&o, e.key.id, 8);
                put(&o, e.key.shape, 8);
                put(&o, e.count, 8);
                put(&o, uint32_t(e.dtype), 4);
                put(&o, e.last_use, 8);
                o.append(reinterpret_cast<const char *>(e.data.get()), e.nbytes);
            }
        const uint64_t length = o.size() + kCheck;
        for (size_t i = 0; i < 8; ++i) o[16 + i] = char(uint8_t(length >> (8 * i)));
        put(&o, crc32c(0, o.data(), o.size()), 4);
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "out of memory encoding the error feedback residuals");
    }
    return TERSE_OK;
}

Status feedback_file_decode(const std::string &bytes, const std::string &file, const FeedbackFileOrigin &expect,
                            FeedbackStore *store, FeedbackKeyer::Ordinals *ordinals) {
    const char *f = file.c_str();
    if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return set_error(TERSE_ERR_CORRUPT, "'%s' is not a terse error feedback file (no TERSE-FB header)", f);
    Reader head(bytes, bytes.size());
    uint64_t magic, version, order, length;
    head.u(8, &magic);
    if (!head.u(4, &version) || !head.u(4, &order) || !head.u(8, &length))
        return set_error(TERSE_ERR_CORRUPT, "error feedback file '%s' is truncated: %zu bytes", f, bytes.size());
    if (version != kVersion)
        return set_error(TERSE_ERR_CORRUPT,
                         "error feedback file '%s' has format version %llu; this terse reads %u", f,
                         (unsigned long long)version, kVersion);
    if (length != bytes.size())
        return set_error(TERSE_ERR_CORRUPT,
                         "error feedback file '%s' is truncated or damaged: %zu bytes, its header says %llu", f,
                         bytes.size(), (unsigned long long)length);
    if (bytes.size() < kFixedHeader + kCheck) return corrupt(file, "shorter than its header");
    uint32_t stored_crc = 0;
    for (size_t i = 0; i < kCheck; ++i)
        stored_crc |= uint32_t(uint8_t(bytes[bytes.size() - kCheck + i])) << (8 * i);
    if (crc32c(0, bytes.data(), bytes.size() - kCheck) != stored_crc)
        return corrupt(file, "its check value does not match its contents");
    // Intact from here on: what differs is a file of another run.
    if (order != host_order())
        return set_error(TERSE_ERR_MISMATCH,
                         "error feedback file '%s' was written on a host of the other byte order", f);
    Reader r(bytes, bytes.size() - kCheck);
    uint64_t rank, size, mode, clen;
    r.take(24);  // magic, version, byte order and length, checked above
    r.u(4, &rank);
    r.u(4, &size);
    r.u(4, &mode);
    r.u(4, &clen);
    const char *codec = r.take(clen);
    if (!r.ok()) return corrupt(file, "its codec runs past the end");
    if (size != uint64_t(expect.size))
        return set_error(TERSE_ERR_MISMATCH,
                         "error feedback file '%s' was saved on a communicator of %llu ranks, this one has %d", f,
                         (unsigned long long)size, expect.size);
    if (rank != uint64_t(expect.rank))
        return set_error(TERSE_ERR_MISMATCH,
                         "error feedback file '%s' holds the residuals of rank %llu, not of rank %d", f,
                         (unsigned long long)rank, expect.rank);
    if (mode != uint64_t(expect.mode))
        return set_error(TERSE_ERR_MISMATCH,
                         "error feedback file '%s' was saved with feedback_key=%s, this communicator has "
                         "feedback_key=%s",
                         f,
                         mode <= uint64_t(FeedbackKeyMode::Tag) ? feedback_key_name(FeedbackKeyMode(mode)) : "?",
                         feedback_key_name(expect.mode));
    if (std::string(codec, clen) != expect.codec)
        return set_error(TERSE_ERR_MISMATCH,
                         "error feedback file '%s' was saved with codec '%s', this communicator has codec '%s'",
                         f, std::string(codec, clen).c_str(), expect.codec.c_str());
    uint64_t clock, nshapes;
    r.u(8, &clock);
    r.u(4, &nshapes);
    if (!r.ok()) return corrupt(file, "its residual section runs past the end");
    FeedbackKeyer::Ordinals ords;
    try {
        for (uint64_t i = 0; i < nshapes && r.ok(); ++i) {
            uint64_t shape = 0, next = 0;
            r.u(8, &shape);
            r.u(8, &next);
            ords.push_back({shape, next});
        }
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "out of memory reading '%s'", f);
    }
    uint64_t n = 0;
    r.u(4, &n);
    if (!r.ok()) return corrupt(file, "its sequence ordinals run past the end");
    if (n > 0 && !store)
        return set_error(TERSE_ERR_INVALID,
                         "error feedback file '%s' holds %llu residuals, but error feedback is off on this "
                         "communicator (codec '%s'; see feedback=)",
                         f, (unsigned long long)n, expect.codec.c_str());
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t id, shape, count, dtype, last_use;
        r.u(8, &id);
        r.u(8, &shape);
        r.u(8, &count);
        r.u(4, &dtype);
        r.u(8, &last_use);
        if (!r.ok() || dtype >= TERSE_DTYPE_MAX_) return corrupt(file, "a residual's header is damaged");
        const size_t esize = dtype_size(unsigned(dtype));
        if (esize == 0 || count > bytes.size() / esize) return corrupt(file, "a residual runs past the end");
        const char *data = r.take(count * esize);
        if (!data) return corrupt(file, "a residual runs past the end");
        FeedbackKey key;
        key.mode = expect.mode;
        key.id = id;
        key.shape = shape;
        Status s = store->restore_entry(key, count, terse_dtype_t(dtype), last_use, data);
        if (s != TERSE_OK)
            return set_error(s, "error feedback file '%s': residual %llu: %s", f, (unsigned long long)i,
                             last_error());
    }
    if (r.pos() != bytes.size() - kCheck) return corrupt(file, "bytes follow its last residual");
    if (store) store->restore_clock(clock);
    *ordinals = std::move(ords);
    return TERSE_OK;
}

Status feedback_file_write(const std::string &file, const std::string &bytes) {
    const std::string tmp = file + ".tmp";
    FILE *fp = std::fopen(tmp.c_str(), "wb");
    if (!fp) return set_error(TERSE_ERR_IO, "cannot create '%s': %s", tmp.c_str(), std::strerror(errno));
    const bool written = std::fwrite(bytes.data(), 1, bytes.size(), fp) == bytes.size();
    const int werr = errno;
    const bool closed = std::fclose(fp) == 0;
    if (!written || !closed) {
        const int err = written ? errno : werr;
        std::remove(tmp.c_str());
        return set_error(TERSE_ERR_IO, "cannot write '%s': %s", tmp.c_str(), std::strerror(err));
    }
    return TERSE_OK;
}

Status feedback_file_commit(const std::string &file) {
    const std::string tmp = file + ".tmp";
    if (std::rename(tmp.c_str(), file.c_str()) != 0) {
        const int err = errno;
        std::remove(tmp.c_str());
        return set_error(TERSE_ERR_IO, "cannot rename '%s' to '%s': %s", tmp.c_str(), file.c_str(),
                         std::strerror(err));
    }
    return TERSE_OK;
}

void feedback_file_discard(const std::string &file) { std::remove((file + ".tmp").c_str()); }

Status feedback_file_read(const std::string &file, size_t limit, std::string *bytes) {
    FILE *fp = std::fopen(file.c_str(), "rb");
    if (!fp)
        return set_error(TERSE_ERR_IO, "cannot open error feedback file '%s': %s", file.c_str(),
                         std::strerror(errno));
    Status s = TERSE_OK;
    try {
        bytes->clear();
        char buf[1 << 16];
        size_t got;
        while ((got = std::fread(buf, 1, sizeof buf, fp)) > 0) {
            if (bytes->size() + got > limit) {
                s = set_error(TERSE_ERR_CORRUPT,
                              "'%s' is larger than any error feedback file of this communicator (%zu bytes)",
                              file.c_str(), limit);
                break;
            }
            bytes->append(buf, got);
        }
        if (s == TERSE_OK && std::ferror(fp))
            s = set_error(TERSE_ERR_IO, "cannot read error feedback file '%s': %s", file.c_str(),
                          std::strerror(errno));
    } catch (const std::bad_alloc &) {
        s = set_error(TERSE_ERR_NO_MEMORY, "out of memory reading '%s'", file.c_str());
    }
    std::fclose(fp);
    return s;
}

}  // namespace terse
