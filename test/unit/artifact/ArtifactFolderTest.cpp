//===- ArtifactFolderTest.cpp - What the writer does to OUT and around it --===//
//
// The artifact folder rules (codegen/artifact/ArtifactWriter.cpp):
//  - the manifest lists every file fusec wrote ("files") and records
//    checksums of the weights and the library ("checksums"), which the
//    runtime verifies at load;
//  - recompiling into a previous artifact replaces only an artifact: a folder
//    that also holds files fusec did not write (or a nested folder) is
//    refused, and nothing in it is touched;
//  - stale OUT.tmp-XXXXXX / OUT.old-XXXXXX folders that an interrupted fusec
//    left beside OUT are removed when provably fusec's (its marker file and
//    nothing but plain files); other neighbours, and a user's folder of the
//    same shape (OUT.old-backup), are not.
//
//===----------------------------------------------------------------------===//
#include <filesystem>
#include <fstream>
#include <string>

#include "codegen/artifact/ArtifactWriter.h"
#include "driver/Driver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/internal/Checksum.h"
#include "test/unit/TestModels.h"

namespace fusec {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Json = nlohmann::json;

class ArtifactFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("fusec_folder_" + std::string(::testing::UnitTest::GetInstance()
                                                ->current_test_info()
                                                ->name()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    out_ = root_ / "out";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  /// Compiles the bundled example model into out_ (no nvcc).
  absl::Status compile() {
    driver::CompileOptions o;
    o.inputShapes["x"] = {2, 24, 128};
    o.output = out_.string();
    o.runNvcc = false;
    std::string model = (testing::sourceDir() / "examples/models/attn_causal_sdpa/model.onnx").string();
    return driver::compile(model, o).status();
  }
  /// A folder as an interrupted fusec leaves it: its marker and \p file.
  void staleFolder(const fs::path &dir, const std::string &file) {
    fs::create_directories(dir);
    std::ofstream(dir / artifact::kOwnerMarkerFile) << artifact::kOwnerMarkerText;
    std::ofstream(dir / file) << "partial";
  }
  Json manifest() {
    std::ifstream in(out_ / "manifest.json");
    return Json::parse(in);
  }
  fs::path root_, out_;
};

TEST_F(ArtifactFolderTest, ManifestListsFilesAndChecksums) {
  ASSERT_TRUE(compile().ok());
  Json m = manifest();
  ASSERT_TRUE(m.contains("files"));
  for (const Json &f : m["files"]) EXPECT_TRUE(fs::exists(out_ / f.get<std::string>())) << f;
  EXPECT_EQ(m["files"].size(), std::distance(fs::directory_iterator(out_), fs::directory_iterator()));
  // The marker of the folder being written is not part of the artifact.
  EXPECT_FALSE(fs::exists(out_ / artifact::kOwnerMarkerFile));
  ASSERT_TRUE(m.contains("checksums"));
  std::string sum;
  ASSERT_TRUE(artifact_checksum::fileChecksum((out_ / "weights.bin").string(), sum));
  EXPECT_EQ(m["checksums"]["weights.bin"], sum);
  // --no-nvcc: no library, so no checksum for it.
  EXPECT_FALSE(m["checksums"].contains("libmodel.so"));
  EXPECT_EQ(m["library_build"], "by hand");  // so the loader needs no checksum of it
}

TEST_F(ArtifactFolderTest, RecompilingReplacesAnArtifact) {
  ASSERT_TRUE(compile().ok());
  ASSERT_TRUE(compile().ok());
  EXPECT_TRUE(fs::exists(out_ / "manifest.json"));
}

TEST_F(ArtifactFolderTest, FilesTheUserAddedAreNeverDeleted) {
  ASSERT_TRUE(compile().ok());
  std::ofstream(out_ / "my-notes.txt") << "keep me";
  fs::create_directories(out_ / "results");
  absl::Status s = compile();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("my-notes.txt"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("results"));
  EXPECT_TRUE(fs::exists(out_ / "my-notes.txt"));
  EXPECT_TRUE(fs::exists(out_ / "results"));
  EXPECT_TRUE(fs::exists(out_ / "manifest.json"));
}

// Red team s25 F2: the previous manifest's "files" list is not trusted to
// widen what fusec owns: a list naming the user's file does not get it deleted.
TEST_F(ArtifactFolderTest, AFilesListNamingAUsersFileDoesNotDeleteIt) {
  ASSERT_TRUE(compile().ok());
  std::ofstream(out_ / "notes.txt") << "keep me";
  Json m = manifest();
  m["files"].push_back("notes.txt");
  std::ofstream(out_ / "manifest.json", std::ios::trunc) << m.dump(2);
  absl::Status s = compile();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("notes.txt"));
  EXPECT_TRUE(fs::exists(out_ / "notes.txt"));
}

// Red team s26: without a "files" list (deleted, or not an array) fusec
// claimed every name any backend writes, so a user's run.py beside a cuda
// artifact was deleted; and a list without fusion.json still had a user's
// fusion.json replaced. Only the previous target's names are fusec's now.
TEST_F(ArtifactFolderTest, WithoutAFilesListOnlyTheTargetsNamesAreFusecs) {
  for (const char *how : {"removed", "not an array"}) {
    ASSERT_TRUE(compile().ok());
    std::ofstream(out_ / "run.py") << "print('my driver')";
    Json m = manifest();
    if (std::string(how) == "removed") m.erase("files");
    else m["files"] = "run.py";
    std::ofstream(out_ / "manifest.json", std::ios::trunc) << m.dump(2);
    absl::Status s = compile();
    ASSERT_FALSE(s.ok()) << how;
    EXPECT_THAT(std::string(s.message()), HasSubstr("run.py")) << how;
    EXPECT_TRUE(fs::exists(out_ / "run.py")) << how;
    fs::remove(out_ / "run.py");
  }
  ASSERT_TRUE(compile().ok());
  Json m = manifest();
  Json files = Json::array();
  for (const Json &f : m["files"])
    if (f != "fusion.json") files.push_back(f);
  m["files"] = files;
  std::ofstream(out_ / "manifest.json", std::ios::trunc) << m.dump(2);
  std::ofstream(out_ / "fusion.json", std::ios::trunc) << "{\"mine\": 1}";
  absl::Status s = compile();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("fusion.json"));
  std::ifstream in(out_ / "fusion.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{\"mine\": 1}");
}

TEST_F(ArtifactFolderTest, StaleTemporaryFoldersAreRemoved) {
  staleFolder(root_ / "out.tmp-Ab12Cd", "model.cu");
  staleFolder(root_ / "out.old-Zz99Yy", "manifest.json");
  fs::create_directories(root_ / "out.tmp-mine");       // not mkdtemp's shape: kept
  staleFolder(root_ / "other.tmp-Ab12Cd", "model.cu");  // another OUT's: kept
  ASSERT_TRUE(compile().ok());
  EXPECT_FALSE(fs::exists(root_ / "out.tmp-Ab12Cd"));
  EXPECT_FALSE(fs::exists(root_ / "out.old-Zz99Yy"));
  EXPECT_TRUE(fs::exists(root_ / "out.tmp-mine"));
  EXPECT_TRUE(fs::exists(root_ / "other.tmp-Ab12Cd"));
  // And the write itself leaves none behind.
  for (const auto &e : fs::directory_iterator(root_))
    EXPECT_EQ(e.path().filename().string().find("out.tmp-") == 0 &&
                  e.path().filename().string().size() == 14,
              false)
        << e.path();
}

// Issue 10: a user's out.old-backup/notes.txt was deleted, for its name alone.
TEST_F(ArtifactFolderTest, FoldersNotProvablyFusecsAreKept) {
  fs::create_directories(root_ / "out.old-backup");
  std::ofstream(root_ / "out.old-backup" / "notes.txt") << "precious";  // no marker
  staleFolder(root_ / "out.tmp-Nested", "model.cu");
  fs::create_directories(root_ / "out.tmp-Nested" / "results");  // fusec writes no folder
  fs::create_directories(root_ / "out.old-Forged");
  std::ofstream(root_ / "out.old-Forged" / artifact::kOwnerMarkerFile) << "not fusec's text";
  std::ofstream(root_ / "marker-text") << artifact::kOwnerMarkerText;
  fs::create_directories(root_ / "out.tmp-Linked");  // the marker is a link: kept
  fs::create_symlink(root_ / "marker-text", root_ / "out.tmp-Linked" / artifact::kOwnerMarkerFile);
  ASSERT_TRUE(compile().ok());
  EXPECT_TRUE(fs::exists(root_ / "out.old-backup" / "notes.txt"));
  EXPECT_TRUE(fs::exists(root_ / "out.tmp-Nested" / "results"));
  EXPECT_TRUE(fs::exists(root_ / "out.old-Forged"));
  EXPECT_TRUE(fs::exists(root_ / "out.tmp-Linked"));
  // A second compile swaps folders (out.old-XXXXXX) and leaves them all.
  ASSERT_TRUE(compile().ok());
  EXPECT_TRUE(fs::exists(root_ / "out.old-backup" / "notes.txt"));
}

}  // namespace
}  // namespace fusec
