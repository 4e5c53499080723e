// Scanning a model repository folder and choosing versions (src/serve/model_repository_layout.h).
#include "serve/model_repository_layout.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace inferloop::serve {
namespace {
namespace fs = std::filesystem;

// A fresh folder under the system temp folder, removed with everything in it at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "il_serve_repo_XXXXXX").string();
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A version folder with a (placeholder) model file: the layout scan never opens it.
void AddVersion(const fs::path& model_dir, const std::string& version) {
  WriteFile(model_dir / version / "model.onnx", "not parsed by the scan");
}

std::vector<int64_t> Versions(const ModelLayout& m) {
  std::vector<int64_t> v;
  for (const auto& f : m.versions) v.push_back(f.version);
  return v;
}

const ModelLayout* Find(const std::vector<ModelLayout>& models, const std::string& name) {
  for (const auto& m : models)
    if (m.name == name) return &m;
  return nullptr;
}

TEST(ModelRepositoryLayout, PoliciesAndErrorsPerModel) {
  TempDir repo;
  ASSERT_FALSE(repo.path().empty());
  // No config: the latest version only.
  for (const char* v : {"1", "2", "10"}) AddVersion(repo.path() / "a_default", v);
  // latest 2, plus folders that are not versions and a version without a model file.
  WriteFile(repo.path() / "b_latest2" / "config.pbtxt", "version_policy: { latest: { num_versions: 2 } }");
  for (const char* v : {"1", "3", "7"}) AddVersion(repo.path() / "b_latest2", v);
  AddVersion(repo.path() / "b_latest2", "007");          // leading zero: not a version
  AddVersion(repo.path() / "b_latest2", "warmup");       // not numeric
  fs::create_directories(repo.path() / "b_latest2" / "9");  // no model.onnx
  // all
  WriteFile(repo.path() / "c_all" / "config.pbtxt", "name: \"c_all\"\nversion_policy: { all: {} }");
  for (const char* v : {"3", "1", "2"}) AddVersion(repo.path() / "c_all", v);
  // specific, all present
  WriteFile(repo.path() / "d_specific" / "config.pbtxt", "version_policy: { specific: { versions: [ 4, 2 ] } }");
  for (const char* v : {"1", "2", "3", "4"}) AddVersion(repo.path() / "d_specific", v);
  // specific, one missing: an error for this model only.
  WriteFile(repo.path() / "e_missing" / "config.pbtxt", "version_policy: { specific: { versions: [ 1, 5 ] } }");
  AddVersion(repo.path() / "e_missing", "1");
  // broken config
  WriteFile(repo.path() / "f_badconfig" / "config.pbtxt", "max_batch_size: 4\nbogus_field: 1\n");
  AddVersion(repo.path() / "f_badconfig", "1");
  // name mismatch
  WriteFile(repo.path() / "g_wrongname" / "config.pbtxt", "name: \"other\"");
  AddVersion(repo.path() / "g_wrongname", "1");
  // no versions at all
  fs::create_directories(repo.path() / "h_empty");
  // not models: a file and a hidden folder
  WriteFile(repo.path() / "README.txt", "hello");
  AddVersion(repo.path() / ".hidden", "1");

  auto scanned = ScanModelRepository(repo.path().string());
  ASSERT_TRUE(scanned.ok()) << scanned.status().ToString();
  const auto& models = *scanned;
  ASSERT_EQ(models.size(), 8u);
  EXPECT_EQ(models.front().name, "a_default");  // sorted by name
  EXPECT_EQ(models.back().name, "h_empty");

  const ModelLayout* a = Find(models, "a_default");
  ASSERT_TRUE(a && a->status.ok()) << (a ? a->status.ToString() : "missing");
  EXPECT_FALSE(a->has_config_file);
  EXPECT_EQ(a->config.name(), "a_default");
  EXPECT_EQ(Versions(*a), (std::vector<int64_t>{10}));
  EXPECT_EQ(a->versions[0].model_path, (repo.path() / "a_default" / "10" / "model.onnx").string());

  const ModelLayout* b = Find(models, "b_latest2");
  ASSERT_TRUE(b && b->status.ok()) << (b ? b->status.ToString() : "missing");
  EXPECT_TRUE(b->has_config_file);
  EXPECT_EQ(Versions(*b), (std::vector<int64_t>{3, 7}));
  ASSERT_EQ(b->skipped.size(), 1u);
  EXPECT_EQ(b->skipped[0].folder, "9");

  const ModelLayout* c = Find(models, "c_all");
  ASSERT_TRUE(c && c->status.ok()) << (c ? c->status.ToString() : "missing");
  EXPECT_EQ(Versions(*c), (std::vector<int64_t>{1, 2, 3}));

  const ModelLayout* d = Find(models, "d_specific");
  ASSERT_TRUE(d && d->status.ok()) << (d ? d->status.ToString() : "missing");
  EXPECT_EQ(Versions(*d), (std::vector<int64_t>{2, 4}));

  const ModelLayout* e = Find(models, "e_missing");
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->status.ok());
  EXPECT_NE(e->status.message().find("specific version 5"), std::string::npos) << e->status.ToString();
  EXPECT_TRUE(e->versions.empty());

  const ModelLayout* f = Find(models, "f_badconfig");
  ASSERT_TRUE(f);
  EXPECT_NE(f->status.message().find("config.pbtxt:2:"), std::string::npos) << f->status.ToString();
  EXPECT_NE(f->status.message().find("bogus_field"), std::string::npos) << f->status.ToString();

  const ModelLayout* g = Find(models, "g_wrongname");
  ASSERT_TRUE(g);
  EXPECT_NE(g->status.message().find("does not match the model's folder 'g_wrongname'"), std::string::npos)
      << g->status.ToString();

  const ModelLayout* h = Find(models, "h_empty");
  ASSERT_TRUE(h);
  EXPECT_NE(h->status.message().find("no version folder holds a model.onnx"), std::string::npos) << h->status.ToString();
}

TEST(ModelRepositoryLayout, MissingRepositoryIsAnError) {
  auto r = ScanModelRepository("/nonexistent/il_repo");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(ModelRepositoryLayout, ShippedExampleRepository) {
  auto r = ScanModelRepository(std::string(INFERLOOP_SOURCE_DIR) + "/examples/model_repository");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ModelLayout* m = Find(*r, "tiny_cnn");
  ASSERT_TRUE(m && m->status.ok()) << (m ? m->status.ToString() : "missing");
  EXPECT_EQ(Versions(*m), (std::vector<int64_t>{1}));
}

TEST(SelectVersions, Policies) {
  configpb::ModelVersionPolicy latest_default;
  auto r = SelectVersions(latest_default, {3, 1, 2});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<int64_t>{3}));

  configpb::ModelVersionPolicy latest5;
  latest5.mutable_latest()->set_num_versions(5);
  r = SelectVersions(latest5, {3, 1, 2});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<int64_t>{1, 2, 3}));

  configpb::ModelVersionPolicy latest0;
  latest0.mutable_latest()->set_num_versions(0);  // means 1
  r = SelectVersions(latest0, {4, 9});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<int64_t>{9}));

  configpb::ModelVersionPolicy all;
  all.mutable_all();
  EXPECT_FALSE(SelectVersions(all, {}).ok());

  configpb::ModelVersionPolicy specific;
  specific.mutable_specific()->add_versions(2);
  specific.mutable_specific()->add_versions(2);
  r = SelectVersions(specific, {1, 2});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<int64_t>{2}));
}

TEST(NameForMessage, ShortNamesWholeLongOnesCut) {
  EXPECT_EQ(NameForMessage("resnet50"), "resnet50");
  const std::string n64(64, 'a');
  EXPECT_EQ(NameForMessage(n64), n64);
  EXPECT_EQ(NameForMessage(std::string(10000, 'b')), std::string(64, 'b') + "... (10000 bytes)");
}

TEST(WithoutRepositoryPath, TakesOutTheRepositoryFolder) {
  EXPECT_EQ(WithoutRepositoryPath("cannot open /srv/models/m/1/model.onnx: No such file", "/srv/models"),
            "cannot open m/1/model.onnx: No such file");
  EXPECT_EQ(WithoutRepositoryPath("cannot open /srv/models/m/1/model.onnx", "/srv/models/"), "cannot open m/1/model.onnx");
  EXPECT_EQ(WithoutRepositoryPath("model repository /srv/models is not a folder", "/srv/models"),
            "model repository <model repository> is not a folder");
  EXPECT_EQ(WithoutRepositoryPath("a /srv/models/a and /srv/models/b", "/srv/models"), "a a and b");
  EXPECT_EQ(WithoutRepositoryPath("nothing to hide", "/srv/models"), "nothing to hide");
}

TEST(WithoutRepositoryPath, RelativeRepositoryByItsAbsolutePath) {
  const std::string absolute = (fs::current_path() / "repo").lexically_normal().string();
  EXPECT_EQ(WithoutRepositoryPath("cannot open " + absolute + "/m/1/model.onnx", "repo"), "cannot open m/1/model.onnx");
  // The relative form itself names no server path and is left as it is (it may be any word).
  EXPECT_EQ(WithoutRepositoryPath("repo/m: bad", "repo"), "repo/m: bad");
}

TEST(WithoutRepositoryPath, SymlinkedRepositoryByItsRealPath) {
  TempDir dir;
  fs::create_directories(dir.path() / "real");
  fs::create_directory_symlink(dir.path() / "real", dir.path() / "link");
  const std::string real = fs::canonical(dir.path() / "real").string();
  EXPECT_EQ(WithoutRepositoryPath("cannot open " + real + "/m/1/model.onnx", (dir.path() / "link").string()),
            "cannot open m/1/model.onnx");
}

}  // namespace
}  // namespace inferloop::serve
