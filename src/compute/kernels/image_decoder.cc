// ImageDecoder (opset 20): encoded bytes -> [H, W, C] uint8 in RGB, BGR or Grayscale.
//
// BMP, PNM (P1-P6) and baseline TIFF (uncompressed / PackBits, 8-bit chunky) are decoded here;
// JPEG and PNG through imaging/image_codec.h (libjpeg-turbo, libpng, when the build found them;
// alpha is dropped, gray replicated to RGB). WebP and JPEG 2000 need libraries the build does not use and report
// Unimplemented. Grayscale output follows Pillow's convert("L"): L = (19595 R + 38470 G + 7471 B
// + 0x8000) >> 16 of the decoded RGB pixels.
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "imaging/image_codec.h"

namespace inferloop {

void RegisterImageDecoderKernels(KernelRegistry& r);

namespace {

enum class PixelFormat { kRGB, kBGR, kGray };

// A decoded image: interleaved 8-bit RGB, rows top to bottom.
struct RgbImage {
  int64_t h = 0, w = 0;
  Tensor rgb;  // [h, w, 3] uint8
};

// Allocates the RGB buffer through the session's limits.
Status AllocRgb(KernelContext& ctx, int64_t h, int64_t w, RgbImage& img) {
  if (h <= 0 || w <= 0) return Status::InvalidArgument("image has invalid dimensions " + std::to_string(w) + "x" + std::to_string(h));
  if (h > (int64_t{1} << 24) || w > (int64_t{1} << 24))
    return Status::InvalidArgument("image dimensions " + std::to_string(w) + "x" + std::to_string(h) + " are too large");
  img.h = h;
  img.w = w;
  IL_ASSIGN_OR_RETURN(img.rgb, ctx.Allocate(DataType::kUInt8, {h, w, 3}));
  return Status::Ok();
}

uint32_t Le16(const uint8_t* p) { return p[0] | (p[1] << 8); }
uint32_t Le32(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24); }

// ---------------------------------------------------------------------------------------------
// BMP

Status DecodeBmp(KernelContext& ctx, const uint8_t* d, size_t n, RgbImage& img) {
  auto bad = [](const std::string& m) { return Status::InvalidArgument("BMP: " + m); };
  if (n < 26) return bad("file is truncated");
  const uint32_t data_off = Le32(d + 10);
  const uint32_t hdr = Le32(d + 14);
  int64_t w, h;
  uint32_t bpp, comp = 0, ncolors = 0;
  if (hdr == 12) {  // OS/2 BITMAPCOREHEADER
    w = Le16(d + 18);
    h = static_cast<int16_t>(Le16(d + 20));
    bpp = Le16(d + 24);
  } else if (hdr >= 40 && n >= 14 + 40) {
    w = static_cast<int32_t>(Le32(d + 18));
    h = static_cast<int32_t>(Le32(d + 22));
    bpp = Le16(d + 28);
    comp = Le32(d + 30);
    ncolors = Le32(d + 46);
  } else {
    return bad("unsupported header size " + std::to_string(hdr));
  }
  const bool top_down = h < 0;
  if (h < 0) h = -h;
  uint32_t masks[3] = {0x00ff0000u, 0x0000ff00u, 0x000000ffu};
  if (bpp == 16) masks[0] = 0x7c00u, masks[1] = 0x03e0u, masks[2] = 0x001fu;
  if (comp == 3 || comp == 6) {  // BI_BITFIELDS
    if (bpp != 16 && bpp != 32) return bad("bitfields need 16 or 32 bits per pixel");
    const size_t mo = 14 + (hdr >= 52 ? 40 : hdr);
    if (mo + 12 > n) return bad("file is truncated");
    for (int k = 0; k < 3; ++k) masks[k] = Le32(d + mo + 4 * k);
  } else if (comp != 0) {
    return bad("compression " + std::to_string(comp) + " is not supported");
  }
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
    return bad("unsupported bit depth " + std::to_string(bpp));
  // Palette.
  std::vector<uint8_t> pal;  // RGB triples
  if (bpp <= 8) {
    const size_t entry = hdr == 12 ? 3 : 4;
    size_t count = ncolors ? ncolors : (size_t{1} << bpp);
    if (count > 256) return bad("palette too large");
    const size_t po = 14 + hdr;
    if (po + count * entry > n) return bad("palette is truncated");
    for (size_t i = 0; i < count; ++i) {
      const uint8_t* p = d + po + i * entry;
      pal.insert(pal.end(), {p[2], p[1], p[0]});
    }
  }
  IL_RETURN_IF_ERROR(AllocRgb(ctx, h, w, img));
  const size_t stride = ((static_cast<size_t>(w) * bpp + 31) / 32) * 4;
  if (data_off > n || stride * static_cast<size_t>(h) > n - data_off) return bad("pixel data is truncated");
  auto mask_val = [](uint32_t v, uint32_t m) -> uint8_t {
    if (!m) return 0;
    int shift = 0;
    while (!((m >> shift) & 1)) ++shift;
    uint32_t bits = 0;
    while (shift + bits < 32 && ((m >> (shift + bits)) & 1)) ++bits;
    const uint32_t maxv = bits >= 32 ? 0xffffffffu : ((1u << bits) - 1);
    const uint32_t x = (v & m) >> shift;
    return static_cast<uint8_t>((static_cast<uint64_t>(x) * 255 + maxv / 2) / maxv);
  };
  uint8_t* out = img.rgb.data<uint8_t>();
  for (int64_t y = 0; y < h; ++y) {
    const uint8_t* row = d + data_off + stride * static_cast<size_t>(top_down ? y : h - 1 - y);
    uint8_t* o = out + y * w * 3;
    for (int64_t x = 0; x < w; ++x, o += 3) {
      if (bpp <= 8) {
        const size_t bit = static_cast<size_t>(x) * bpp;
        const uint32_t idx = (row[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
        if (idx * 3 + 2 >= pal.size()) return bad("palette index out of range");
        std::memcpy(o, &pal[idx * 3], 3);
      } else if (bpp == 24) {
        o[0] = row[x * 3 + 2], o[1] = row[x * 3 + 1], o[2] = row[x * 3];
      } else {
        const uint32_t v = bpp == 16 ? Le16(row + x * 2) : Le32(row + x * 4);
        for (int k = 0; k < 3; ++k) o[k] = mask_val(v, masks[k]);
      }
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// PNM (P1..P6)

Status DecodePnm(KernelContext& ctx, const uint8_t* d, size_t n, RgbImage& img) {
  auto bad = [](const std::string& m) { return Status::InvalidArgument("PNM: " + m); };
  const int kind = d[1] - '0';
  size_t pos = 2;
  auto skip_ws = [&]() {
    while (pos < n) {
      if (d[pos] == '#') {
        while (pos < n && d[pos] != '\n' && d[pos] != '\r') ++pos;
      } else if (d[pos] == ' ' || d[pos] == '\t' || d[pos] == '\n' || d[pos] == '\r' || d[pos] == '\v' || d[pos] == '\f') {
        ++pos;
      } else {
        break;
      }
    }
  };
  auto read_num = [&](int64_t& v) -> bool {
    skip_ws();
    if (pos >= n || d[pos] < '0' || d[pos] > '9') return false;
    v = 0;
    while (pos < n && d[pos] >= '0' && d[pos] <= '9') {
      v = v * 10 + (d[pos++] - '0');
      if (v > (int64_t{1} << 30)) return false;
    }
    return true;
  };
  int64_t w, h, maxv = 1;
  if (!read_num(w) || !read_num(h)) return bad("bad header");
  if (kind != 1 && kind != 4 && (!read_num(maxv) || maxv < 1 || maxv > 65535)) return bad("bad maximum value");
  IL_RETURN_IF_ERROR(AllocRgb(ctx, h, w, img));
  const bool ascii = kind <= 3;
  const int ch = (kind == 3 || kind == 6) ? 3 : 1;
  if (!ascii) {
    if (pos >= n) return bad("pixel data is truncated");
    ++pos;  // single whitespace after the header
  }
  uint8_t* out = img.rgb.data<uint8_t>();
  auto scale = [&](int64_t v) -> uint8_t {
    if (v > maxv) v = maxv;
    return maxv == 255 ? static_cast<uint8_t>(v) : static_cast<uint8_t>((v * 255 + maxv / 2) / maxv);
  };
  if (kind == 4) {  // packed bitmap, 1 = black
    const size_t stride = (static_cast<size_t>(w) + 7) / 8;
    if (stride * static_cast<size_t>(h) > n - pos) return bad("pixel data is truncated");
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const bool black = (d[pos + y * stride + x / 8] >> (7 - x % 8)) & 1;
        std::memset(out + (y * w + x) * 3, black ? 0 : 255, 3);
      }
    return Status::Ok();
  }
  const int bytes = maxv > 255 ? 2 : 1;
  if (!ascii && static_cast<size_t>(w * h * ch * bytes) > n - pos) return bad("pixel data is truncated");
  for (int64_t i = 0; i < w * h; ++i) {
    uint8_t px[3];
    for (int c = 0; c < ch; ++c) {
      int64_t v;
      if (ascii) {
        if (kind == 1) {
          skip_ws();
          if (pos >= n || (d[pos] != '0' && d[pos] != '1')) return bad("bad bitmap data");
          v = d[pos++] == '1' ? 0 : 1;  // 1 = black
        } else if (!read_num(v)) {
          return bad("pixel data is truncated");
        }
      } else {
        v = bytes == 2 ? (d[pos] << 8 | d[pos + 1]) : d[pos];
        pos += bytes;
      }
      px[c] = scale(v);
    }
    uint8_t* o = out + i * 3;
    if (ch == 1) o[0] = o[1] = o[2] = px[0];
    else std::memcpy(o, px, 3);
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// TIFF (baseline: uncompressed or PackBits, 8 bits per sample, chunky, strips)

Status DecodeTiff(KernelContext& ctx, const uint8_t* d, size_t n, RgbImage& img) {
  auto bad = [](const std::string& m) { return Status::InvalidArgument("TIFF: " + m); };
  if (n < 8) return bad("file is truncated");
  const bool le = d[0] == 'I';
  auto u16 = [&](size_t o) -> uint32_t { return le ? (d[o] | d[o + 1] << 8) : (d[o] << 8 | d[o + 1]); };
  auto u32 = [&](size_t o) -> uint32_t {
    return le ? Le32(d + o) : (static_cast<uint32_t>(d[o]) << 24 | d[o + 1] << 16 | d[o + 2] << 8 | d[o + 3]);
  };
  const uint32_t ifd = u32(4);
  if (ifd > n - 2) return bad("bad directory offset");
  const uint32_t count = u16(ifd);
  if (ifd + 2 + size_t{count} * 12 > n) return bad("directory is truncated");
  int64_t w = 0, h = 0;
  uint32_t compression = 1, photometric = 2, spp = 1, planar = 1, rows_per_strip = 0xffffffffu;
  std::vector<uint32_t> bits, strip_off, strip_len;
  // Reads all values of an entry (SHORT or LONG) into v.
  auto values = [&](size_t e, std::vector<uint32_t>& v) -> bool {
    const uint32_t type = u16(e + 2), cnt = u32(e + 4);
    const size_t sz = type == 3 ? 2 : type == 4 ? 4 : 0;
    if (!sz || cnt > (1u << 24)) return false;
    size_t off = e + 8;
    if (sz * cnt > 4) {
      off = u32(e + 8);
      if (off > n || sz * cnt > n - off) return false;
    }
    v.resize(cnt);
    for (uint32_t i = 0; i < cnt; ++i) v[i] = sz == 2 ? u16(off + i * 2) : u32(off + i * 4);
    return true;
  };
  for (uint32_t i = 0; i < count; ++i) {
    const size_t e = ifd + 2 + size_t{i} * 12;
    const uint32_t tag = u16(e);
    std::vector<uint32_t> v;
    if (!values(e, v) || v.empty()) continue;
    switch (tag) {
      case 256: w = v[0]; break;
      case 257: h = v[0]; break;
      case 258: bits = v; break;
      case 259: compression = v[0]; break;
      case 262: photometric = v[0]; break;
      case 273: strip_off = v; break;
      case 277: spp = v[0]; break;
      case 278: rows_per_strip = v[0]; break;
      case 279: strip_len = v; break;
      case 284: planar = v[0]; break;
      default: break;
    }
  }
  for (uint32_t b : bits)
    if (b != 8) return bad("only 8 bits per sample are supported");
  if (compression != 1 && compression != 32773) return bad("compression " + std::to_string(compression) + " is not supported");
  if (planar != 1 && spp > 1) return bad("planar configuration " + std::to_string(planar) + " is not supported");
  if (photometric > 2) return bad("photometric interpretation " + std::to_string(photometric) + " is not supported");
  if ((photometric == 2 && spp < 3) || spp < 1 || spp > 8) return bad("unsupported samples per pixel " + std::to_string(spp));
  if (strip_off.empty() || strip_off.size() != strip_len.size()) return bad("missing strip offsets");
  IL_RETURN_IF_ERROR(AllocRgb(ctx, h, w, img));
  // Gather all strips' decoded bytes.
  const size_t need = static_cast<size_t>(w * h) * spp;
  std::vector<uint8_t> buf;
  buf.reserve(need);
  for (size_t s = 0; s < strip_off.size() && buf.size() < need; ++s) {
    const size_t o = strip_off[s], l = strip_len[s];
    if (o > n || l > n - o) return bad("strip is truncated");
    if (compression == 1) {
      buf.insert(buf.end(), d + o, d + o + l);
    } else {  // PackBits
      size_t p = o;
      while (p < o + l && buf.size() < need) {
        const int8_t c = static_cast<int8_t>(d[p++]);
        if (c >= 0) {
          const size_t k = static_cast<size_t>(c) + 1;
          if (p + k > o + l) return bad("PackBits data is truncated");
          buf.insert(buf.end(), d + p, d + p + k);
          p += k;
        } else if (c != -128) {
          if (p >= o + l) return bad("PackBits data is truncated");
          buf.insert(buf.end(), static_cast<size_t>(1 - c), d[p++]);
        }
      }
    }
  }
  (void)rows_per_strip;
  if (buf.size() < need) return bad("pixel data is truncated");
  uint8_t* out = img.rgb.data<uint8_t>();
  for (int64_t i = 0; i < w * h; ++i) {
    const uint8_t* p = buf.data() + i * spp;
    uint8_t* o = out + i * 3;
    if (photometric == 2) std::memcpy(o, p, 3);
    else o[0] = o[1] = o[2] = photometric == 0 ? static_cast<uint8_t>(255 - p[0]) : p[0];
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// JPEG and PNG (imaging/image_codec.h: libjpeg-turbo, libpng)

// The header's size goes through the session's allocation limit before any pixel is decoded.
Status DecodeJpegOrPng(KernelContext& ctx, const uint8_t* d, size_t n, RgbImage& img) {
  const std::string_view bytes(reinterpret_cast<const char*>(d), n);
  IL_ASSIGN_OR_RETURN(imaging::ImageInfo info, imaging::ReadImageInfo(bytes));
  IL_RETURN_IF_ERROR(AllocRgb(ctx, info.height, info.width, img));
  IL_ASSIGN_OR_RETURN(imaging::Image rgb, imaging::DecodeImage(bytes, imaging::DecodeLimits{img.h * img.w}, 3));
  std::memcpy(img.rgb.data<uint8_t>(), rgb.pixels.data(), rgb.pixels.size());
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------

Status DecodeImage(KernelContext& ctx, PixelFormat fmt) {
  IL_ASSIGN_OR_RETURN(const Tensor* enc, ctx.RequireInput(0));
  if (enc->dtype() != DataType::kUInt8) return ctx.Invalid(std::string("expected uint8 input, got ") + DataTypeName(enc->dtype()));
  if (enc->rank() != 1) return ctx.Invalid("expected a 1-D input, got shape " + ShapeToString(enc->shape()));
  const uint8_t* d = enc->data<uint8_t>();
  const size_t n = static_cast<size_t>(enc->size());
  auto starts = [&](const char* magic, size_t len, size_t at = 0) { return n >= at + len && std::memcmp(d + at, magic, len) == 0; };
  RgbImage img;
  Status st;
  if (starts("\xff\xd8\xff", 3)) {
    st = DecodeJpegOrPng(ctx, d, n, img);
  } else if (starts("\x89PNG\r\n\x1a\n", 8)) {
    st = DecodeJpegOrPng(ctx, d, n, img);
  } else if (starts("BM", 2)) {
    st = DecodeBmp(ctx, d, n, img);
  } else if (n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') {
    st = DecodePnm(ctx, d, n, img);
  } else if (starts("II*\0", 4) || starts("MM\0*", 4)) {
    st = DecodeTiff(ctx, d, n, img);
  } else if (starts("RIFF", 4) && starts("WEBP", 4, 8)) {
    return Status::Unimplemented(ctx.node().Describe() + ": WebP decoding needs libwebp, which inferloop does not use");
  } else if (starts("\0\0\0\x0cjP  ", 8) || starts("\xff\x4f\xff\x51", 4)) {
    return Status::Unimplemented(ctx.node().Describe() + ": JPEG 2000 decoding needs OpenJPEG, which inferloop does not use");
  } else {
    return ctx.Invalid("unrecognized image format");
  }
  if (!st.ok()) return st.code() == StatusCode::kInvalidArgument ? ctx.Invalid(st.message()) : st;
  const int64_t px = img.h * img.w;
  uint8_t* rgb = img.rgb.data<uint8_t>();
  if (fmt == PixelFormat::kRGB) {
    ctx.SetOutput(0, std::move(img.rgb));
    return Status::Ok();
  }
  if (fmt == PixelFormat::kBGR) {
    for (int64_t i = 0; i < px; ++i) std::swap(rgb[i * 3], rgb[i * 3 + 2]);
    ctx.SetOutput(0, std::move(img.rgb));
    return Status::Ok();
  }
  IL_ASSIGN_OR_RETURN(Tensor gray, ctx.Allocate(DataType::kUInt8, {img.h, img.w, 1}));
  uint8_t* g = gray.data<uint8_t>();
  for (int64_t i = 0; i < px; ++i) {
    const uint8_t* p = rgb + i * 3;
    g[i] = static_cast<uint8_t>((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
  }
  ctx.SetOutput(0, std::move(gray));
  return Status::Ok();
}

}  // namespace

void RegisterImageDecoderKernels(KernelRegistry& r) {
  r.Register("", "ImageDecoder", 20, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const std::string pf = info.GetString("pixel_format", "RGB");
    PixelFormat fmt;
    if (pf == "RGB") fmt = PixelFormat::kRGB;
    else if (pf == "BGR") fmt = PixelFormat::kBGR;
    else if (pf == "Grayscale") fmt = PixelFormat::kGray;
    else return info.Invalid("pixel_format must be RGB, BGR or Grayscale, got '" + pf + "'");
    return MakeKernel([fmt](KernelContext& ctx) { return DecodeImage(ctx, fmt); });
  });
}

}  // namespace inferloop
