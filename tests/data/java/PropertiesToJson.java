// Oracle for lakecdc's .properties parser: java.util.Properties.load on each input file,
// printed as one JSON object per file ({"ok": {...}} or {"error": "..."}), in input order.
// Run: java tests/data/java/PropertiesToJson.java FILE...
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.TreeMap;

public class PropertiesToJson {
    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    public static void main(String[] args) throws Exception {
        for (String file : args) {
            String text = new String(Files.readAllBytes(Path.of(file)), StandardCharsets.UTF_8);
            Properties props = new Properties();
            try {
                props.load(new StringReader(text));
            } catch (IllegalArgumentException e) {
                System.out.println("{\"error\": " + quote(String.valueOf(e.getMessage())) + "}");
                continue;
            }
            StringBuilder b = new StringBuilder("{\"ok\": {");
            boolean first = true;
            for (var e : new TreeMap<>(props).entrySet()) {
                if (!first) b.append(", ");
                first = false;
                b.append(quote((String) e.getKey())).append(": ").append(quote((String) e.getValue()));
            }
            System.out.println(b.append("}}"));
        }
    }
}
