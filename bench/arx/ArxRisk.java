/*
 * ArxRisk: prints ARX's population-uniqueness estimates (Pitman, Zayatz, SNB, Dankar) so that
 * tests/data/arx_population_uniqueness.json can record them with their provenance.
 * It only calls ARX's public API (Data, DataHandle.getRiskEstimator, RiskModelHistogram,
 * RiskModelPopulationUniqueness, ARXPopulationModel); no ARX code is copied here.
 *
 * Build ARX first (see /work/shared/tools/arx-bench/README.md), then:
 *
 *   CP=$(cat /tmp/arx-build/classpath)
 *   javac -cp "$CP" -d /tmp/arxrisk bench/arx/ArxRisk.java
 *   java -cp "$CP:/tmp/arxrisk" ArxRisk ../shared/data/adult/adult.csv < bench/arx/cases.txt
 *
 * stdin holds one case a line (blank lines and lines starting with '#' are skipped):
 *
 *   adult <name> <qi,qi,...> <population>      estimates over Adult's classes for these QIs
 *   hist  <name> <size:count,size:count,...> <population>
 *                                              estimates over a given class-size histogram
 *   attributes <name> <qi,qi,...>              one line per combination of these QIs: ARX's
 *                                              alpha-distinction and alpha-separation
 *                                              (RiskModelAttributes), recorded in
 *                                              tests/data/arx_attribute_risks.jsonl
 *
 * <population> is a number of people, a region of ARXPopulationModel.Region (e.g. USA), or
 * f=<fraction> for a population of round(n / fraction) (ARXPopulationModel.create(n, f)).
 * Output: one JSON object a line with the case, ARX's histogram summary, each model's fraction
 * of population uniques (getFractionOfUniqueTuples) and whether ARX reports it as available
 * (isAvailableEstimate; ARX returns 0 for a model that did not converge), and the model chosen
 * by Dankar's rule. Doubles are printed with Double.toString (round-trip exact).
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;

import org.deidentifier.arx.ARXPopulationModel;
import org.deidentifier.arx.ARXSolverConfiguration;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.risk.RiskModelAttributes;
import org.deidentifier.arx.risk.RiskModelHistogram;
import org.deidentifier.arx.risk.RiskModelPopulationUniqueness;
import org.deidentifier.arx.risk.RiskModelPopulationUniqueness.PopulationUniquenessModel;

import com.carrotsearch.hppc.IntIntOpenHashMap;

public class ArxRisk {

    public static void main(String[] args) throws Exception {
        String adult = args[0];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] p = line.split("\\s+");
            RiskModelHistogram histogram;
            String qis = null, hist = null;
            if (p[0].equals("attributes")) {
                attributes(adult, p[1], p[2]);
                continue;
            }
            if (p[0].equals("adult")) {
                qis = p[2];
                histogram = adultHistogram(adult, qis);
            } else if (p[0].equals("hist")) {
                hist = p[2];
                histogram = parseHistogram(hist);
            } else {
                throw new IllegalArgumentException("unknown case kind: " + p[0]);
            }
            ARXPopulationModel population = population(p[3], (int) histogram.getNumRecords());
            RiskModelPopulationUniqueness model = new RiskModelPopulationUniqueness(
                    population, histogram, ARXSolverConfiguration.create());
            StringBuilder out = new StringBuilder("{");
            out.append(str("name", p[1])).append(", ");
            if (qis != null) out.append(str("qi", qis)).append(", ");
            if (hist != null) out.append(str("histogram", hist)).append(", ");
            out.append(str("population_arg", p[3])).append(", ");
            out.append(num("population", population.getPopulationSize())).append(", ");
            out.append(num("records", histogram.getNumRecords())).append(", ");
            out.append(num("classes", histogram.getNumClasses())).append(", ");
            for (PopulationUniquenessModel m : new PopulationUniquenessModel[] {
                    PopulationUniquenessModel.PITMAN, PopulationUniquenessModel.ZAYATZ,
                    PopulationUniquenessModel.SNB, PopulationUniquenessModel.DANKAR }) {
                String key = m.name().toLowerCase(Locale.ROOT);
                out.append(num(key, model.getFractionOfUniqueTuples(m))).append(", ");
                out.append("\"" + key + "_available\": " + model.isAvailableEstimate(m)).append(", ");
            }
            out.append(str("dankar_model", String.valueOf(model.getPopulationUniquenessModel())));
            out.append("}");
            System.out.println(out);
        }
    }

    /** One line per QI combination: ARX's alpha-distinction and alpha-separation. */
    static void attributes(String file, String name, String qis) throws Exception {
        RiskModelAttributes risks = adultHandle(file, qis)
                .getRiskEstimator(ARXPopulationModel.create(ARXPopulationModel.Region.USA))
                .getAttributeRisks();
        for (RiskModelAttributes.QuasiIdentifierRisk r : risks.getAttributeRisks()) {
            System.out.println("{" + str("name", name) + ", " + str("qi", qis) + ", "
                    + str("attributes", String.join(",", r.getIdentifier())) + ", "
                    + num("distinction", r.getDistinction()) + ", "
                    + num("separation", r.getSeparation()) + "}");
        }
    }

    static RiskModelHistogram adultHistogram(String file, String qis) throws Exception {
        return adultHandle(file, qis)
                .getRiskEstimator(ARXPopulationModel.create(ARXPopulationModel.Region.USA))
                .getEquivalenceClassModel();
    }

    static org.deidentifier.arx.DataHandle adultHandle(String file, String qis) throws Exception {
        Data data = Data.create(file, StandardCharsets.UTF_8, ';');
        Set<String> qi = new HashSet<>();
        for (String q : qis.split(",")) qi.add(q);
        for (String name : header(file)) {
            data.getDefinition().setAttributeType(name, qi.contains(name)
                    ? AttributeType.QUASI_IDENTIFYING_ATTRIBUTE : AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        if (!data.getDefinition().getQuasiIdentifyingAttributes().equals(qi)) {
            throw new IllegalArgumentException("unknown QI in " + qis);
        }
        return data.getHandle();
    }

    static String[] header(String file) throws Exception {
        try (BufferedReader r = java.nio.file.Files.newBufferedReader(java.nio.file.Paths.get(file), StandardCharsets.UTF_8)) {
            return r.readLine().split(";");
        }
    }

    static RiskModelHistogram parseHistogram(String spec) {
        IntIntOpenHashMap map = new IntIntOpenHashMap();
        for (String e : spec.split(",")) {
            String[] kv = e.split(":");
            map.put(Integer.parseInt(kv[0]), Integer.parseInt(kv[1]));
        }
        return new RiskModelHistogram(map);
    }

    static ARXPopulationModel population(String arg, int records) {
        if (arg.startsWith("f=")) return ARXPopulationModel.create(records, Double.parseDouble(arg.substring(2)));
        if (Character.isDigit(arg.charAt(0))) return ARXPopulationModel.create(Long.parseLong(arg));
        return ARXPopulationModel.create(ARXPopulationModel.Region.valueOf(arg));
    }

    static String str(String k, String v) { return "\"" + k + "\": \"" + v + "\""; }

    static String num(String k, double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) return "\"" + k + "\": null";
        return "\"" + k + "\": " + Double.toString(v);
    }
}
