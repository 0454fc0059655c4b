/*
 * ARX harness of bench/bench_arx_live.py: ../shared/tools/arx-bench/ArxBench.java (same
 * output, same server mode "-") plus the keys the live comparison needs:
 *   tord=T   ordered-distance t-closeness of occupation (ARX's OrderedDistanceTCloseness)
 *   qi=8s    the layout of ARX's own JUnit tests on Adult: occupation sensitive, the other
 *            eight columns (salary-class included) quasi-identifiers
 * Compiled by bench_arx_live.py against an ARX build (../shared/tools/arx-bench/build.sh).
 *
 * The original header follows.
 * ARX benchmark harness for the Adult configurations of anchors/arx-on-adult-2026-11-22.md.
 * Uses only ARX's public API (Data.create, Hierarchy.create, ARXConfiguration, ARXAnonymizer).
 *
 *   java -cp <arx classpath>:<bench> ArxBench DATA_DIR CONFIG [WARMUPS=2] [REPS=5] [--csv FILE]
 *
 * DATA_DIR holds adult.csv and adult_hierarchy_<attr>.csv (';'-separated, as shipped with ARX).
 * CONFIG is one of A0 A2 B C-ent C-rec D-eq D-hier, "all" (those 7, in one JVM), several joined
 * with '+', or a custom spec: comma-separated key=value, optionally starting with a named config
 * whose settings it overrides, e.g. "A2,metric=dmstar" or "qi=7,ldist=3,supp=0.02". Keys:
 *   qi=8|7          8: all QIs but salary-class; 7: occupation becomes the sensitive attribute
 *   k=N ldist=L lent=L lrec=C/L teq=T thier=T   privacy models (any combination)
 *   supp=X          suppression limit (fraction)
 *   metric=loss|dmstar|dm|aecs|prec|precnm|nuent|nuentnm|height
 * CONFIG "-" reads configs from stdin, one per line, and answers each with its result line as
 * soon as it is done ("quit" or EOF ends): lets a driver alternate ARX with another tool while
 * keeping one warm JVM.
 * --csv FILE reads the records from FILE instead (same columns, ';'), e.g. the 1M-row synthetic
 * independent-marginals file; hierarchies still come from DATA_DIR.
 *
 * Per config: WARMUPS untimed runs (the first is reported as cold_ms; in a fresh JVM it includes
 * class loading and JIT), then REPS timed runs. Every run re-creates Data from the CSV (ARX locks
 * a Data object once anonymized); the load is timed separately (load_*), anon times cover
 * ARXAnonymizer.anonymize() alone. Output, one line per config:
 *   ARX <cfg> optimum=[..] checked=<n> lattice=<n> supp=<rows> cold_ms=<x> warm_best_ms=<x>
 *       warm_median_ms=<x> ec=<n> il=<x> rows=<n> load_cold_ms=<x> load_warm_median_ms=<x>
 *       warm_cpu_median_ms=<x> (the CPU time of the thread calling anonymize(), ARX's search)
 * Levels are listed in the QI order sex, age, race, marital-status, education, native-country,
 * workclass[, occupation].
 */
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.aggregates.StatisticsEquivalenceClasses;
import org.deidentifier.arx.criteria.DistinctLDiversity;
import org.deidentifier.arx.criteria.EntropyLDiversity;
import org.deidentifier.arx.criteria.EqualDistanceTCloseness;
import org.deidentifier.arx.criteria.HierarchicalDistanceTCloseness;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.criteria.OrderedDistanceTCloseness;
import org.deidentifier.arx.criteria.RecursiveCLDiversity;
import org.deidentifier.arx.metric.Metric;
import org.deidentifier.arx.metric.Metric.AggregateFunction;

public class ArxLive {

    static final String[] Q8 = {"sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"};
    static final String SENS = "occupation";
    static final String[] Q8S = {"sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"};

    static final Map<String, String> NAMED = new LinkedHashMap<>();
    static {
        NAMED.put("A0", "qi=8,k=5,supp=0");
        NAMED.put("A2", "qi=8,k=5,supp=0.02");
        NAMED.put("B", "qi=7,ldist=3,supp=0.02");
        NAMED.put("C-ent", "qi=7,lent=3,supp=0.02");
        NAMED.put("C-rec", "qi=7,lrec=3/3,supp=0.02");
        NAMED.put("D-eq", "qi=7,teq=0.2,supp=0.02");
        NAMED.put("D-hier", "qi=7,thier=0.2,supp=0.02");
    }

    /** Parsed configuration */
    static final class Spec {
        String name;
        Map<String, String> kv = new LinkedHashMap<>();
        int qi() { String q = kv.getOrDefault("qi", "8"); return q.equals("8s") ? 9 : Integer.parseInt(q); }
    }

    static Spec parse(String cfg) {
        Spec s = new Spec();
        s.name = cfg;
        String[] parts = cfg.split(",");
        int from = 0;
        if (NAMED.containsKey(parts[0])) {
            for (String t : NAMED.get(parts[0]).split(",")) put(s, t);
            from = 1;
        } else if (!parts[0].contains("=")) {
            throw new IllegalArgumentException("unknown config '" + parts[0] + "' (known: " + NAMED.keySet() + " or key=value spec)");
        }
        for (int i = from; i < parts.length; i++) put(s, parts[i]);
        if (s.qi() != 7 && s.qi() != 8 && s.qi() != 9) throw new IllegalArgumentException("qi must be 7, 8 or 8s");
        return s;
    }

    static void put(Spec s, String t) {
        int e = t.indexOf('=');
        if (e < 0) throw new IllegalArgumentException("bad spec token '" + t + "'");
        s.kv.put(t.substring(0, e).trim(), t.substring(e + 1).trim());
    }

    static Metric<?> metric(String m) {
        switch (m) {
        case "loss": return Metric.createLossMetric();
        case "dmstar": return Metric.createDiscernabilityMetric(true);
        case "dm": return Metric.createDiscernabilityMetric(false);
        case "aecs": return Metric.createAECSMetric();
        case "prec": return Metric.createPrecisionMetric(true, AggregateFunction.ARITHMETIC_MEAN);
        case "precnm": return Metric.createPrecisionMetric(false, AggregateFunction.ARITHMETIC_MEAN);
        case "nuent": return Metric.createEntropyMetric(true);
        case "nuentnm": return Metric.createEntropyMetric(false);
        case "height": return Metric.createHeightMetric();
        default: throw new IllegalArgumentException("unknown metric " + m);
        }
    }

    static String[][] hierarchyArray(File dir, String attr) throws IOException {
        return Hierarchy.create(new File(dir, "adult_hierarchy_" + attr + ".csv"), StandardCharsets.UTF_8, ';').getHierarchy();
    }

    static Map<String, String[][]> H = new LinkedHashMap<>();

    static Data load(File csv) throws IOException {
        return Data.create(csv, StandardCharsets.UTF_8, ';');
    }

    static String[] qis(Spec s) {
        return s.qi() == 9 ? Q8S : s.qi() == 8 ? Q8 : Arrays.copyOf(Q8, 7);
    }

    static void define(Data data, Spec s) {
        String[] q = qis(s);
        DataHandle h = data.getHandle();
        for (int c = 0; c < h.getNumColumns(); c++) {
            String a = h.getAttributeName(c);
            data.getDefinition().setAttributeType(a, AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        for (String a : q) data.getDefinition().setAttributeType(a, Hierarchy.create(H.get(a)));
        if (s.qi() != 8) data.getDefinition().setAttributeType(SENS, AttributeType.SENSITIVE_ATTRIBUTE);
    }

    static ARXConfiguration config(Spec s) {
        ARXConfiguration c = ARXConfiguration.create();
        boolean any = false;
        for (Map.Entry<String, String> e : s.kv.entrySet()) {
            String v = e.getValue();
            switch (e.getKey()) {
            case "qi": case "supp": case "metric": break;
            case "k": c.addPrivacyModel(new KAnonymity(Integer.parseInt(v))); any = true; break;
            case "ldist": c.addPrivacyModel(new DistinctLDiversity(SENS, Integer.parseInt(v))); any = true; break;
            case "lent": c.addPrivacyModel(new EntropyLDiversity(SENS, Double.parseDouble(v), EntropyLDiversity.EntropyEstimator.SHANNON)); any = true; break;
            case "lrec": {
                String[] cl = v.split("/");
                c.addPrivacyModel(new RecursiveCLDiversity(SENS, Double.parseDouble(cl[0]), Integer.parseInt(cl[1]))); any = true; break;
            }
            case "tord": c.addPrivacyModel(new OrderedDistanceTCloseness(SENS, Double.parseDouble(v))); any = true; break;
            case "teq": c.addPrivacyModel(new EqualDistanceTCloseness(SENS, Double.parseDouble(v))); any = true; break;
            case "thier": c.addPrivacyModel(new HierarchicalDistanceTCloseness(SENS, Double.parseDouble(v), Hierarchy.create(H.get(SENS)))); any = true; break;
            default: throw new IllegalArgumentException("unknown key " + e.getKey());
            }
        }
        if (!any) throw new IllegalArgumentException("config " + s.name + " has no privacy model");
        if (s.qi() == 8 && s.kv.keySet().stream().anyMatch(k -> k.startsWith("l") || k.startsWith("t")))
            throw new IllegalArgumentException("l-diversity/t-closeness need qi=7 (occupation sensitive)");
        c.setSuppressionLimit(Double.parseDouble(s.kv.getOrDefault("supp", "0")));
        c.setQualityModel(metric(s.kv.getOrDefault("metric", "loss")));
        return c;
    }

    static double ms(long ns) { return ns / 1e6; }

    static double median(List<Double> v) {
        double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (a.length == 0) return Double.NaN;
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }

    static String fmt(double x) { return String.format(Locale.ROOT, "%.1f", x); }

    public static void main(String[] args) throws Exception {
        List<String> pos = new ArrayList<>();
        File csvOverride = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--csv")) csvOverride = new File(args[++i]);
            else pos.add(args[i]);
        }
        if (pos.size() < 2) {
            System.err.println("usage: ArxLive DATA_DIR CONFIG[+CONFIG..|all|-] [WARMUPS=2] [REPS=5] [--csv FILE]");
            System.exit(2);
        }
        File dir = new File(pos.get(0));
        String cfgArg = pos.get(1);
        int warmups = pos.size() > 2 ? Integer.parseInt(pos.get(2)) : 2;
        int reps = pos.size() > 3 ? Integer.parseInt(pos.get(3)) : 5;
        File csv = csvOverride != null ? csvOverride : new File(dir, "adult.csv");
        for (String a : Q8) H.put(a, hierarchyArray(dir, a));
        H.put("salary-class", hierarchyArray(dir, "salary-class"));
        System.err.println("# ARX " + ARXAnonymizer.VERSION + ", java " + System.getProperty("java.version") + ", data " + csv
                           + ", warmups " + warmups + ", reps " + reps);
        if (cfgArg.equals("-")) {
            // Server mode for drivers that interleave ARX with another tool in one JVM: one config
            // per stdin line, one result line per config; "quit" or EOF ends.
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null;) {
                line = line.trim();
                if (line.isEmpty()) continue;
                if (line.equals("quit")) break;
                try {
                    run(parse(line), csv, Math.max(1, warmups), reps);
                } catch (Exception e) {
                    System.out.println("ARX " + line + " error=" + e.toString().replace(' ', '_'));
                    System.out.flush();
                }
            }
            return;
        }
        List<String> cfgs = cfgArg.equals("all") ? new ArrayList<>(NAMED.keySet()) : Arrays.asList(cfgArg.split("\\+"));
        for (String cfg : cfgs) run(parse(cfg), csv, Math.max(1, warmups), reps);
    }

    static void run(Spec s, File csv, int warmups, int reps) throws Exception {
        List<Double> anon = new ArrayList<>(), loads = new ArrayList<>(), cpus = new ArrayList<>();
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        double cold = Double.NaN, loadCold = Double.NaN;
        String levels = null;
        long checked = 0;
        String lattice = null;
        int supp = -1, ec = -1, rows = -1;
        String il = null;
        for (int r = 0; r < warmups + reps; r++) {
            long t0 = System.nanoTime();
            Data data = load(csv);
            define(data, s);
            ARXConfiguration config = config(s);
            long t1 = System.nanoTime();
            long c1 = threads.getCurrentThreadCpuTime();
            ARXResult result = new ARXAnonymizer().anonymize(data, config);
            long c2 = threads.getCurrentThreadCpuTime();
            long t2 = System.nanoTime();
            if (r == 0) { cold = ms(t2 - t1); loadCold = ms(t1 - t0); }
            if (r >= warmups) { anon.add(ms(t2 - t1)); loads.add(ms(t1 - t0)); cpus.add(ms(c2 - c1)); }
            ARXNode opt = result.getGlobalOptimum();
            String lv = "none";
            if (opt != null) {
                StringBuilder b = new StringBuilder("[");
                String[] q = qis(s);
                for (int i = 0; i < q.length; i++) b.append(i > 0 ? "," : "").append(opt.getGeneralization(q[i]));
                lv = b.append("]").toString();
            }
            if (levels != null && !levels.equals(lv)) throw new IllegalStateException("optimum changed between runs: " + levels + " vs " + lv);
            levels = lv;
            if (r == warmups + reps - 1) {
                checked = result.getProcessStatistics().getTransformationsChecked();
                lattice = result.getProcessStatistics().getTransformationsAvailable().toString();
                rows = data.getHandle().getNumRows();
                if (opt != null) {
                    StatisticsEquivalenceClasses st = result.getOutput().getStatistics().getEquivalenceClassStatistics();
                    supp = st.getNumberOfSuppressedRecords();
                    ec = st.getNumberOfEquivalenceClasses();
                    il = opt.getHighestScore().toString();
                }
            }
            result = null; data = null;
        }
        double best = anon.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
        System.out.println("ARX " + s.name + " optimum=" + levels + " checked=" + checked + " lattice=" + lattice + " supp=" + supp
                           + " cold_ms=" + fmt(cold) + " warm_best_ms=" + fmt(best) + " warm_median_ms=" + fmt(median(anon))
                           + " ec=" + ec + " il=" + (il == null ? "none" : il.replace(' ', '_')) + " rows=" + rows
                           + " load_cold_ms=" + fmt(loadCold) + " load_warm_median_ms=" + fmt(median(loads))
                           + " warm_cpu_median_ms=" + fmt(median(cpus)));
        System.out.flush();
    }
}
