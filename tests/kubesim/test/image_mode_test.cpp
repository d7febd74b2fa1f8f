// kubesim --images buildah: pods run from images in buildah's vfs storage, each container in
// its image's root filesystem (container_runtime.hpp). The image, localhost/kubesim-test/shell:1
// (Debian minbase, USER 65532:65532, WORKDIR /srv, ENV FOO=bar, ENTRYPOINT ["/bin/sh","-c"]),
// is made by the ctest fixture kubesim.test_image (make_test_image.sh). Needs root and buildah;
// without them every test here skips, saying so.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "harness.hpp"

using namespace kubesim_test;

namespace {

const std::string kImage = "kubesim-test/shell:1";

/// buildah waits for its storage's lock while another buildah builds an image: minutes, on a
/// machine that builds images beside these tests.
constexpr double kBuildahWait = 300;

CmdResult buildah(std::vector<std::string> args) {
  args.insert(args.begin(), {KUBESIM_BUILDAH, "--storage-driver", "vfs"});
  return run_cmd(args, {}, "", kBuildahWait);
}

/// Empty when the image tests can run here, else why not.
std::string unavailable() {
  if (geteuid() != 0) return "image mode needs root (mount namespaces, overlayfs, pivot_root)";
  if (std::string(KUBESIM_BUILDAH).empty()) return "buildah is not installed";
  return "";
}

#define REQUIRE_IMAGE_MODE()                                                                     \
  do {                                                                                           \
    const std::string why = unavailable();                                                       \
    if (!why.empty()) GTEST_SKIP() << why;                                                       \
    ASSERT_EQ(buildah({"inspect", "--type", "image", "localhost/" + kImage}).code, 0)            \
        << "no test image: the ctest fixture kubesim.test_image (make_test_image.sh) builds it"; \
  } while (0)

std::vector<std::string> image_args() { return {"--images", "buildah"}; }

std::string pod(const std::string& name, const std::string& containers, const std::string& spec_extra = "") {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  restartPolicy: Never\n" +
         "  terminationGracePeriodSeconds: 2\n" + spec_extra + "  containers:\n" + containers;
}

std::string container(const std::string& name, const std::string& script, const std::string& extra = "") {
  return "  - name: " + name + "\n    image: " + kImage + "\n    command: [sh, -c, " + json(script).dump() + "]\n" +
         extra;
}

std::string trim_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

json get_pod(const Kubesim& sim, const std::string& name) { return sim.get_json({"pod", name}); }

std::string phase_of(const Kubesim& sim, const std::string& name) {
  json p = get_pod(sim, name);
  return p.is_object() ? p["status"].value("phase", "") : "";
}

bool ends(const Kubesim& sim, const std::string& name) {
  return wait_until(kBuildahWait, [&] {
    const std::string ph = phase_of(sim, name);
    return ph == "Succeeded" || ph == "Failed";
  });
}

/// Applies the pod and waits for it to end: its phase.
std::string run_pod(const Kubesim& sim, const std::string& name, const std::string& yaml) {
  CmdResult applied = sim.apply(yaml);
  if (applied.code != 0) return "not created: " + applied.err;
  ends(sim, name);
  return phase_of(sim, name);
}

std::string logs(const Kubesim& sim, const std::string& pod_name, const std::string& c) {
  return sim.kubectl({"logs", pod_name, "-c", c}).out;
}

json waiting_of(const Kubesim& sim, const std::string& name) {
  json p = get_pod(sim, name);
  const json* st = p.is_object() ? &p["status"] : nullptr;
  if (!st || !st->contains("containerStatuses")) return json();
  return (*st)["containerStatuses"][0]["state"].value("waiting", json());
}

}  // namespace

TEST(KubesimImages, EnvironmentUserWorkingDirServiceAccountAndTerminationMessage) {
  REQUIRE_IMAGE_MODE();
  Kubesim sim(image_args());
  const std::string script =
      "id -u; id -g; pwd; echo FOO=$FOO X=$X HOME=$HOME HOSTNAME=$HOSTNAME; echo PATH=$PATH; "
      "env | grep -E '^(LD_LIBRARY_PATH|TMPDIR|TRAINBENCH_|LANG=)' || echo no-leak; "
      "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; "
      "test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token-readable; "
      "hostname; grep -c \"$(hostname)\" /etc/hosts; echo bye > /dev/termination-log";
  const std::string yaml =
      pod("basic", container("main", script, "    env: [{name: X, value: from-pod}, {name: FOO, value: pod-wins}]\n") +
                       "  - name: args\n    image: " + kImage + "\n    args: ['echo args $FOO']\n" +
                       "  - name: image\n    image: " + kImage + "\n");
  ASSERT_EQ(run_pod(sim, "basic", yaml), "Succeeded");
  json p = get_pod(sim, "basic");
  EXPECT_EQ(logs(sim, "basic", "main"),
            "65532\n65532\n/srv\nFOO=pod-wins X=from-pod HOME=/ HOSTNAME=basic\n"
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nno-leak\ndefault\ntoken-readable\n"
            "basic\n1\n");
  EXPECT_EQ(logs(sim, "basic", "args"), "args bar\n");        // ENTRYPOINT + args
  EXPECT_EQ(logs(sim, "basic", "image"), "image-cmd bar\n");  // ENTRYPOINT + CMD
  const json& cs = p["status"]["containerStatuses"][0];
  EXPECT_EQ(cs["state"]["terminated"]["message"], "bye\n");
  EXPECT_EQ(cs["image"], "localhost/" + kImage);
  const std::string id =
      trim_line(buildah({"inspect", "--type", "image", "--format", "{{.FromImageID}}", "localhost/" + kImage}).out);
  EXPECT_EQ(cs["imageID"], "sha256:" + id);
}

TEST(KubesimImages, RunAsUserGroupWorkingDirAndNoNewPrivileges) {
  REQUIRE_IMAGE_MODE();
  Kubesim sim(image_args());
  const std::string yaml =
      pod("ids",
          container(
              "main", "id -u; id -g; id -G; pwd; grep NoNewPrivs /proc/self/status",
              "    workingDir: /made/here\n    securityContext: {runAsGroup: 4321, allowPrivilegeEscalation: false}\n"),
          "  securityContext: {runAsUser: 1234, runAsGroup: 99, supplementalGroups: [77], fsGroup: 88}\n");
  ASSERT_EQ(run_pod(sim, "ids", yaml), "Succeeded");
  EXPECT_EQ(logs(sim, "ids", "main"), "1234\n4321\n4321 77 88\n/made/here\nNoNewPrivs:\t1\n");
}

TEST(KubesimImages, ReadOnlyRootFilesystemAndSharedEmptyDir) {
  REQUIRE_IMAGE_MODE();
  Kubesim sim(image_args());
  const std::string root = "    securityContext: {runAsUser: 0, readOnlyRootFilesystem: true}\n";
  const std::string yaml =
      pod("vols",
          container("writer", "touch /x 2>&1 || true; echo shared > /scratch/f; test -w /tmp || echo tmp-read-only",
                    root + "    volumeMounts: [{name: scratch, mountPath: /scratch}]\n") +
              container("reader",
                        "until test -s /data/f; do sleep 0.1; done; cat /data/f; touch /data/g 2>&1 || true; "
                        "touch /ok && echo root-writable; ls -ld /data | cut -c1-10",
                        "    securityContext: {runAsUser: 0}\n"
                        "    volumeMounts: [{name: scratch, mountPath: /data, readOnly: true}]\n"),
          "  volumes: [{name: scratch, emptyDir: {}}]\n");
  ASSERT_EQ(run_pod(sim, "vols", yaml), "Succeeded");
  EXPECT_EQ(logs(sim, "vols", "writer"), "touch: cannot touch '/x': Read-only file system\ntmp-read-only\n");
  EXPECT_EQ(logs(sim, "vols", "reader"),
            "shared\ntouch: cannot touch '/data/g': Read-only file system\nroot-writable\ndrwxrwxrwx\n");
}

TEST(KubesimImages, RunAsNonRootRefusesRoot) {
  REQUIRE_IMAGE_MODE();
  Kubesim sim(image_args());
  const std::string spec = "  securityContext: {runAsNonRoot: true}\n";
  ASSERT_EQ(sim.apply(pod("root", container("main", "id -u", "    securityContext: {runAsUser: 0}\n"), spec)).code, 0);
  ASSERT_EQ(sim.apply(pod("nonroot", container("main", "id -u"), spec)).code, 0);
  ASSERT_TRUE(ends(sim, "nonroot"));
  EXPECT_EQ(phase_of(sim, "nonroot"), "Succeeded");  // the image's USER 65532
  ASSERT_TRUE(wait_until(kBuildahWait,
                         [&] { return waiting_of(sim, "root").value("reason", "") == "CreateContainerConfigError"; }));
  json p = get_pod(sim, "root");
  EXPECT_EQ(p["status"]["phase"], "Pending");
  EXPECT_EQ(waiting_of(sim, "root")["message"], "container's runAsUser breaks non-root policy (pod: \"root_default(" +
                                                    p["metadata"]["uid"].get<std::string>() + ")\", container: main)");
}

TEST(KubesimImages, PodNetworkShimGivesEachPodItsPort) {
  REQUIRE_IMAGE_MODE();
  Kubesim sim(image_args());
  const std::string listen =
      "exec perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => \"0.0.0.0\", LocalPort => 7777, "
      "Listen => 1) or die \"listen: $!\"; print $s->sockhost, \"\\n\"; STDOUT->flush; sleep 30'";
  ASSERT_EQ(sim.apply(pod("net-a", container("main", listen))).code, 0);
  ASSERT_EQ(sim.apply(pod("net-b", container("main", listen))).code, 0);
  for (const char* name : {"net-a", "net-b"}) {
    ASSERT_TRUE(wait_until(kBuildahWait, [&] { return !logs(sim, name, "main").empty(); })) << name;
    EXPECT_EQ(phase_of(sim, name), "Running");
    EXPECT_EQ(logs(sim, name, "main"), get_pod(sim, name)["status"]["podIP"].get<std::string>() + "\n");
  }
}

TEST(KubesimImages, MissingImageIsErrImagePullThenImagePullBackOff) {
  REQUIRE_IMAGE_MODE();
  Kubesim sim(image_args());
  const std::string spec = "  - name: main\n    image: kubesim-test/no-such-image:1\n";
  ASSERT_EQ(sim.apply(pod("missing", spec)).code, 0);
  ASSERT_EQ(sim.apply(pod("never", spec + "    imagePullPolicy: Never\n")).code, 0);
  ASSERT_TRUE(
      wait_until(kBuildahWait, [&] { return waiting_of(sim, "missing").value("reason", "") == "ErrImagePull"; }));
  EXPECT_EQ(waiting_of(sim, "missing")["message"].get<std::string>().rfind(
                "Failed to pull image \"kubesim-test/no-such-image:1\": ", 0),
            0u);
  ASSERT_TRUE(wait_until(20, [&] { return waiting_of(sim, "missing").value("reason", "") == "ImagePullBackOff"; }));
  EXPECT_EQ(waiting_of(sim, "missing")["message"].get<std::string>().rfind(
                "Back-off pulling image \"kubesim-test/no-such-image:1\"", 0),
            0u);
  EXPECT_EQ(phase_of(sim, "missing"), "Pending");
  json events = sim.get_json({"events", "--field-selector", "involvedObject.name=missing"});
  std::string reasons;
  for (const auto& e : events["items"]) reasons += e.value("reason", "") + " ";
  EXPECT_NE(reasons.find("Failed"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("BackOff"), std::string::npos) << reasons;
  ASSERT_TRUE(
      wait_until(kBuildahWait, [&] { return waiting_of(sim, "never").value("reason", "") == "ErrImageNeverPull"; }));
  EXPECT_EQ(waiting_of(sim, "never")["message"],
            "Container image \"kubesim-test/no-such-image:1\" is not present with pull policy of Never");
}

TEST(KubesimImages, KillDeleteAndNothingLeftAfterExit) {
  REQUIRE_IMAGE_MODE();
  auto sim = std::make_unique<Kubesim>(image_args());
  const std::string sleeper = "echo $$$$ > /shared/pid; exec sleep 300";  // $$ is $ after $(VAR) expansion
  const std::string vol = "    volumeMounts: [{name: shared, mountPath: /shared}]\n";
  const std::string vols = "  volumes: [{name: shared, emptyDir: {}}]\n";
  for (const char* name : {"killed", "deleted", "left"}) {
    ASSERT_EQ(sim->apply(pod(name, container("main", sleeper, vol), vols)).code, 0);
  }
  std::map<std::string, pid_t> pids;
  for (const char* name : {"killed", "deleted", "left"}) {
    ASSERT_TRUE(wait_until(kBuildahWait, [&] { return phase_of(*sim, name) == "Running"; })) << name;
    const json p = get_pod(*sim, name);
    const std::string pid_file = sim->dir() + "/pods/default_" + name + "_" + p["metadata"]["uid"].get<std::string>() +
                                 "/volumes/kubernetes.io~empty-dir/shared/pid";
    ASSERT_TRUE(wait_until(10, [&] { return read_text(pid_file).find('\n') != std::string::npos; })) << pid_file;
    pids[name] = std::atoi(read_text(pid_file).c_str());
    ASSERT_GT(pids[name], 1) << name << ": " << read_text(pid_file);
  }
  // The container's mounts are in its own namespace: the host sees none of them.
  EXPECT_NE(read_text("/proc/" + std::to_string(pids["left"]) + "/mountinfo").find(" overlay "), std::string::npos);
  EXPECT_EQ(read_text("/proc/self/mountinfo").find(sim->dir()), std::string::npos);
  ASSERT_EQ(sim->http("POST", "/kubesim/v1/namespaces/default/pods/killed/kill?signal=9").code, 200);
  ASSERT_TRUE(ends(*sim, "killed"));
  EXPECT_EQ(get_pod(*sim, "killed")["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
  ASSERT_EQ(sim->kubectl({"delete", "pod", "deleted", "--wait=true"}, "", 30).code, 0);
  EXPECT_FALSE(process_alive(pids["deleted"]));
  const std::string kubesim_pid = std::to_string(sim->pid());
  const std::string dir = sim->dir();
  EXPECT_EQ(sim->stop(), 0);
  EXPECT_FALSE(process_alive(pids["left"]));
  EXPECT_EQ(read_text("/proc/self/mountinfo").find(dir), std::string::npos);
  CmdResult containers = buildah({"containers", "--format", "{{.ContainerName}}"});
  EXPECT_EQ(containers.out.find("kubesim-rootfs-" + kubesim_pid + "-"), std::string::npos) << containers.out;
}

TEST(KubesimImages, RefusedWithoutRoot) {
  REQUIRE_IMAGE_MODE();
  if (std::string(KUBESIM_SETPRIV).empty()) GTEST_SKIP() << "no setpriv (util-linux) to drop root with";
  CmdResult r = run_cmd({KUBESIM_SETPRIV, "--reuid", "65534", "--regid", "65534", "--clear-groups", KUBESIM_EXE,
                         "--dir", "/tmp/kubesim-not-root", "--images", "buildah"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--images buildah"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("must run as root"), std::string::npos) << r.err;
}
