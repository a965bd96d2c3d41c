import java.util.*;
public class JavaNumberText {
  public static void main(String[] a) {
    Random r = new Random(7);
    StringBuilder sb = new StringBuilder();
    sb.append("# OpenJDK ").append(System.getProperty("java.version")).append(": kind bits Double.toString|Float.toString\n");
    for (int i = 0; i < 1500; i++) {
      double d = Double.longBitsToDouble(r.nextLong());
      if (Double.isNaN(d) || Double.isInfinite(d)) continue;
      sb.append("D ").append(Double.doubleToRawLongBits(d)).append(' ').append(Double.toString(d)).append('\n');
    }
    for (int i = 0; i < 1500; i++) {
      float f = Float.intBitsToFloat(r.nextInt());
      if (Float.isNaN(f) || Float.isInfinite(f)) continue;
      sb.append("F ").append(Float.floatToRawIntBits(f)).append(' ').append(Float.toString(f)).append('\n');
    }
    for (int i = 0; i < 1000; i++) {
      double d = (r.nextInt(2000000) - 1000000) / Math.pow(10, r.nextInt(12));
      sb.append("D ").append(Double.doubleToRawLongBits(d)).append(' ').append(Double.toString(d)).append('\n');
      float f = (float) d;
      sb.append("F ").append(Float.floatToRawIntBits(f)).append(' ').append(Float.toString(f)).append('\n');
    }
    // integral values across [2^20, 2^64): the family where Java 17 and 19+ differ
    for (int e = 20; e < 64; e++) {
      for (int i = 0; i < 10; i++) {
        double d = Math.scalb(1.0 + r.nextDouble(), e); d = Math.floor(d);
        sb.append("D ").append(Double.doubleToRawLongBits(d)).append(' ').append(Double.toString(d)).append('\n');
        float f = (float) d;
        sb.append("F ").append(Float.floatToRawIntBits(f)).append(' ').append(Float.toString(f)).append('\n');
      }
    }
    // binade and decade boundaries with their neighbours, subnormals: where the old algorithm's
    // symmetric margin and digit estimate show
    for (int e = -1074; e <= 1023; e += 7) { double p = Math.scalb(1.0, e); dbl(sb, p); dbl(sb, Math.nextUp(p)); dbl(sb, Math.nextDown(p)); }
    for (int e = -149; e <= 127; e++) { float p = Math.scalb(1.0f, e); flt(sb, p); flt(sb, Math.nextUp(p)); flt(sb, Math.nextDown(p)); }
    for (int e = -323; e <= 308; e += 3) { double p = Double.parseDouble("1e" + e); dbl(sb, p); dbl(sb, Math.nextUp(p)); dbl(sb, Math.nextDown(p)); dbl(sb, p * 3); }
    for (int e = -45; e <= 38; e++) { float p = Float.parseFloat("1e" + e); flt(sb, p); flt(sb, Math.nextUp(p)); flt(sb, Math.nextDown(p)); }
    for (int i = 0; i < 1000; i++) { dbl(sb, Double.longBitsToDouble(r.nextLong() & 0x000FFFFFFFFFFFFFL)); }
    for (int i = 0; i < 1000; i++) { flt(sb, Float.intBitsToFloat(r.nextInt() & 0x007FFFFF)); }
    double[] special = {Double.MIN_VALUE, Double.MAX_VALUE, Double.MIN_NORMAL, 1e23, 2e23, 1e7, 1e-3, 9.999999999999999e-4, 0.1, 1.0/3, -0.0, 0.0};
    for (double d : special) sb.append("D ").append(Double.doubleToRawLongBits(d)).append(' ').append(Double.toString(d)).append('\n');
    float[] fspecial = {Float.MIN_VALUE, Float.MAX_VALUE, Float.MIN_NORMAL, 1e10f, 0.1f, 1.0f/3, 123456789f, -0.0f, 3.4e38f};
    for (float f : fspecial) sb.append("F ").append(Float.floatToRawIntBits(f)).append(' ').append(Float.toString(f)).append('\n');
    System.out.print(sb);
  }

  static void dbl(StringBuilder sb, double d) {
    if (Double.isNaN(d) || Double.isInfinite(d) || d == 0.0) return;
    sb.append("D ").append(Double.doubleToRawLongBits(d)).append(' ').append(Double.toString(d)).append('\n');
  }

  static void flt(StringBuilder sb, float f) {
    if (Float.isNaN(f) || Float.isInfinite(f) || f == 0.0f) return;
    sb.append("F ").append(Float.floatToRawIntBits(f)).append(' ').append(Float.toString(f)).append('\n');
  }
}
